package nodelifecycle

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reasons and messages of the conditions the controller writes (reference §3.2).
const (
	reasonUnknown       = "NodeStatusUnknown"
	messageUnknown      = "Kubelet stopped posting node status."
	reasonNeverUpdated  = "NodeStatusNeverUpdated"
	messageNeverUpdated = "Kubelet never posted node status."
)

// timedOutConditions are the conditions set to Unknown when a node goes
// silent. NetworkUnavailable is left alone: the control plane owns it.
var timedOutConditions = []corev1.NodeConditionType{
	corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure,
}

// nodeHealth is what the controller remembers of one node between passes.
type nodeHealth struct {
	// status is the status last seen (or written); shared, read-only.
	status *corev1.NodeStatus
	// probe is when the node last showed a sign of life, on the controller's clock.
	probe time.Time
	// readyTransition is when the controller last saw Ready change.
	readyTransition time.Time
	// lease is the node lease last seen to advance; shared, read-only.
	lease *coordinationv1.Lease
}

func readyCondition(s *corev1.NodeStatus) *corev1.NodeCondition {
	return condition(s, corev1.NodeReady)
}

func condition(s *corev1.NodeStatus, t corev1.NodeConditionType) *corev1.NodeCondition {
	if s == nil {
		return nil
	}
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// healthUpdate is what one look at a node (assessHealth) decided: its
// Ready condition as observed and as it is after the look, and the status
// to write when the node timed out.
type healthUpdate struct {
	node     *corev1.Node
	observed corev1.NodeCondition
	// current is the Ready condition after the look (nil if the node has
	// none); when write is set it is write's, which holds until the write
	// is known to have failed.
	current *corev1.NodeCondition
	// write is a copy of node with its timed-out conditions Unknown, to be
	// written (nil if nothing changes); written is the health to remember
	// once it is.
	write   *corev1.Node
	written *nodeHealth
	// err is the write's outcome, set by whoever wrote it.
	err error
}

// assessHealth is one look at node n, which it treats as read-only (it is
// usually the watch cache's shared object; it copies n before changing it):
// it refreshes n's probe timestamp from its Ready heartbeat and its lease,
// and once the grace period has passed without a sign of life it marks the
// timed-out conditions Unknown in a copy for the caller to write. The
// observed Ready condition is a stand-in Unknown one if n never posted one.
// The decision is written to *u, which a pass keeps in a buffer it reuses,
// so that looking at a healthy node allocates nothing.
func (c *Controller) assessHealth(n *corev1.Node, u *healthUpdate) {
	now := c.clock.Now()
	h := c.health[n.Name]
	// Whatever happens below, remember what was seen.
	defer func() { c.health[n.Name] = h }()

	*u = healthUpdate{node: n}
	grace := c.cfg.GracePeriod
	u.current = readyCondition(&n.Status)
	if u.current == nil {
		// Never posted: judge from the creation time, with the startup grace.
		u.observed = corev1.NodeCondition{
			Type:               corev1.NodeReady,
			Status:             corev1.ConditionUnknown,
			LastHeartbeatTime:  n.CreationTimestamp,
			LastTransitionTime: n.CreationTimestamp,
		}
		grace = c.cfg.StartupGracePeriod
		if h != nil {
			h.status = &n.Status
		} else {
			h = &nodeHealth{status: &n.Status, probe: n.CreationTimestamp.Time, readyTransition: n.CreationTimestamp.Time}
		}
	} else {
		u.observed = *u.current
	}
	current := u.current

	var saved *corev1.NodeCondition
	var savedLease *coordinationv1.Lease
	if h != nil {
		saved = readyCondition(h.status)
		savedLease = h.lease
	}
	switch {
	case h == nil:
		// First look at a node that has a status: count it as alive now.
		h = &nodeHealth{status: &n.Status, probe: now, readyTransition: now}
	case saved == nil && current != nil, saved != nil && current == nil:
		// A first Ready condition, or (wrongly) a removed one: start afresh.
		h = &nodeHealth{status: &n.Status, probe: now, readyTransition: now, lease: savedLease}
	case saved != nil && !saved.LastHeartbeatTime.Equal(&current.LastHeartbeatTime):
		// The node posted status: a heartbeat.
		transition := h.readyTransition
		if !saved.LastTransitionTime.Equal(&current.LastTransitionTime) {
			transition = now
		}
		h = &nodeHealth{status: &n.Status, probe: now, readyTransition: transition, lease: savedLease}
	}

	// A lease renewal is a heartbeat only if renewTime strictly advanced: a
	// rewrite with the same renewTime (or a new resourceVersion) is not one.
	if l := c.cluster.nodeLease(n.Name); l != nil && renewedAfter(l, h.lease) {
		h.lease = l
		h.probe = now
	}

	if !now.After(h.probe.Add(grace)) {
		return
	}
	// Only silent nodes get here: copying every node on every pass cost
	// tens of megabytes of garbage per pass at 10,000 nodes.
	marked := n.DeepCopy()
	markUnknown(marked, metav1.NewTime(now))
	u.current = readyCondition(&marked.Status)
	if equality.Semantic.DeepEqual(u.current, &u.observed) {
		return
	}
	c.log.Info("node stopped posting status", "node", n.Name, "silentFor", now.Sub(h.probe).String(), "grace", grace.String())
	u.write = marked
	u.written = &nodeHealth{status: &marked.Status, probe: h.probe, readyTransition: now, lease: h.lease}
}

// updateHealth is assessHealth with its write done at once.
func (c *Controller) updateHealth(ctx context.Context, n *corev1.Node) (observed corev1.NodeCondition, current *corev1.NodeCondition, err error) {
	var u healthUpdate
	c.assessHealth(n, &u)
	if u.write == nil {
		return u.observed, u.current, nil
	}
	if err := c.cluster.updateStatus(ctx, u.write); err != nil {
		return u.observed, u.current, err
	}
	c.health[n.Name] = u.written
	return u.observed, u.current, nil
}

// renewedAfter reports whether l's renewTime is strictly later than saved's
// (any renewTime is later than no saved lease).
func renewedAfter(l, saved *coordinationv1.Lease) bool {
	if saved == nil {
		return true
	}
	if l.Spec.RenewTime == nil {
		return false
	}
	if saved.Spec.RenewTime == nil {
		return true
	}
	return saved.Spec.RenewTime.Before(l.Spec.RenewTime)
}

// markUnknown sets every timed-out condition of n to Unknown: missing ones
// are added as never updated, others keep their heartbeat and get the
// "stopped posting" reason (reference §3.2).
func markUnknown(n *corev1.Node, now metav1.Time) {
	for _, t := range timedOutConditions {
		cond := condition(&n.Status, t)
		if cond == nil {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{
				Type:               t,
				Status:             corev1.ConditionUnknown,
				Reason:             reasonNeverUpdated,
				Message:            messageNeverUpdated,
				LastHeartbeatTime:  n.CreationTimestamp,
				LastTransitionTime: now,
			})
			continue
		}
		if cond.Status != corev1.ConditionUnknown {
			cond.Status = corev1.ConditionUnknown
			cond.Reason = reasonUnknown
			cond.Message = messageUnknown
			cond.LastTransitionTime = now
		}
	}
}

// finishHealth applies the outcome of u's write, made by the caller: the
// written health is remembered, or the update is retried with a fresh copy
// of the node from the server, up to statusRetries attempts in all,
// statusRetrySleep apart, as kube-controller-manager does.
func (c *Controller) finishHealth(ctx context.Context, u *healthUpdate) (observed corev1.NodeCondition, current *corev1.NodeCondition, err error) {
	if u.write == nil {
		return u.observed, u.current, nil
	}
	if u.err != nil {
		return c.retryHealth(ctx, u.node.Name, u.observed, u.current, u.err)
	}
	c.health[u.node.Name] = u.written
	return u.observed, u.current, nil
}

// retryHealth makes attempts 2..statusRetries of a node's health update
// whose first write failed with err (observed and current from it).
func (c *Controller) retryHealth(ctx context.Context, name string, observed corev1.NodeCondition, current *corev1.NodeCondition, err error) (corev1.NodeCondition, *corev1.NodeCondition, error) {
	for attempt := 1; ; attempt++ {
		if attempt == statusRetries || ctx.Err() != nil {
			return observed, current, fmt.Errorf("updating health of node %s after %d attempts: %w", name, attempt, err)
		}
		c.clock.Sleep(statusRetrySleep)
		n, ferr := c.cluster.freshNode(ctx, name)
		if ferr != nil {
			return observed, current, fmt.Errorf("re-reading node to retry its health update: %w", ferr)
		}
		if observed, current, err = c.updateHealth(ctx, n); err == nil {
			return observed, current, nil
		}
	}
}
