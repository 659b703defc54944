package nodeenv

import (
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// poll is how often the waits look.
const poll = 100 * time.Millisecond

// ReadyCondition is n's Ready condition, nil if it has none.
func ReadyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// WaitReady waits until the Node name exists with Ready=True and without
// an unreachable taint, and returns it.
func (e *Env) WaitReady(name string, timeout time.Duration) *corev1.Node {
	e.t.Helper()
	var node *corev1.Node
	testdeps.Eventually(e.t, timeout, poll, "node "+name+" Ready without unreachable taints", func() error {
		n, err := e.Node(name)
		if err != nil {
			return err
		}
		if r := ReadyCondition(n); r == nil || r.Status != corev1.ConditionTrue {
			return fmt.Errorf("ready condition = %+v", r)
		}
		for _, taint := range n.Spec.Taints {
			if taint.Key == corev1.TaintNodeUnreachable {
				return fmt.Errorf("still tainted %+v", n.Spec.Taints)
			}
		}
		node = n
		return nil
	})
	return node
}

// WaitOwnedLease waits until the lease name exists owned by the Node with
// uid nodeUID (its only owner), and returns it.
func (e *Env) WaitOwnedLease(name string, nodeUID types.UID, timeout time.Duration) *coordinationv1.Lease {
	e.t.Helper()
	var lease *coordinationv1.Lease
	testdeps.Eventually(e.t, timeout, poll, "lease "+name+" owned by node uid "+string(nodeUID), func() error {
		l, err := e.Lease(name)
		if err != nil {
			return err
		}
		if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != nodeUID {
			return fmt.Errorf("ownerReferences = %+v", l.OwnerReferences)
		}
		lease = l
		return nil
	})
	return lease
}

// WaitRenewed waits until the lease name (uid leaseUID) is renewed after
// renewed, and returns it. The renewal must update the same object (the
// test fails at once if the lease was re-created) and come no sooner than
// nine tenths of interval, the agent's renew interval.
func (e *Env) WaitRenewed(name string, leaseUID types.UID, renewed time.Time, interval, timeout time.Duration) *coordinationv1.Lease {
	e.t.Helper()
	var lease *coordinationv1.Lease
	testdeps.Eventually(e.t, timeout, poll, "lease "+name+" renewed after "+renewed.Format(time.RFC3339Nano), func() (bool, error) {
		l, err := e.Lease(name)
		if err != nil {
			return false, fmt.Errorf("get lease: %w", err)
		}
		if l.UID != leaseUID {
			return false, fmt.Errorf("lease re-created (uid %s -> %s): renewals must update, not re-create", leaseUID, l.UID)
		}
		if l.Spec.RenewTime == nil || !l.Spec.RenewTime.After(renewed) {
			return false, nil
		}
		lease = l
		return true, nil
	})
	if gap := lease.Spec.RenewTime.Sub(renewed); gap < interval*9/10 {
		e.t.Errorf("lease %s renewed %v after the previous renewal, faster than the %v interval", name, gap, interval)
	}
	return lease
}

// WaitNodeGone waits until the Node name is NotFound.
func (e *Env) WaitNodeGone(name string, timeout time.Duration) {
	e.t.Helper()
	testdeps.Eventually(e.t, timeout, poll, "node "+name+" gone", func() error {
		n, err := e.Node(name)
		if err == nil {
			return fmt.Errorf("node still there (uid %s)", n.UID)
		}
		return notFound(err)
	})
}

// WaitLeaseGone waits until the lease name is NotFound (deleted, or
// garbage-collected with its Node).
func (e *Env) WaitLeaseGone(name string, timeout time.Duration) {
	e.t.Helper()
	testdeps.Eventually(e.t, timeout, poll, "lease "+name+" gone", func() error {
		l, err := e.Lease(name)
		if err == nil {
			return fmt.Errorf("lease still there (uid %s, owners %+v)", l.UID, l.OwnerReferences)
		}
		return notFound(err)
	})
}

// notFound is nil for a NotFound error, and err otherwise.
func notFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return errors.Join(errors.New("want NotFound"), err)
}

// WaitRegistered waits for what a starting agent does first: its Node
// Ready (within ready), then its Lease owned by that Node (within lease
// more), and returns both.
func (e *Env) WaitRegistered(name string, ready, lease time.Duration) (*corev1.Node, *coordinationv1.Lease) {
	e.t.Helper()
	node := e.WaitReady(name, ready)
	return node, e.WaitOwnedLease(name, node.UID, lease)
}
