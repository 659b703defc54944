package nodelifecycle_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/leasehold/leasehold/internal/controller/nodelifecycle"
	"github.com/leasehold/leasehold/internal/server"
	"github.com/leasehold/leasehold/internal/server/servertest"
)

// Short periods so a node times out in about two seconds.
const (
	monitorPeriod = 200 * time.Millisecond
	gracePeriod   = 2 * time.Second
)

func startServer(t *testing.T) kubernetes.Interface {
	t.Helper()
	srv := servertest.Start(t, func(c *server.Config) {
		c.NodeLifecycle = nodelifecycle.Config{
			MonitorPeriod:      monitorPeriod,
			GracePeriod:        gracePeriod,
			StartupGracePeriod: 3 * time.Second,
		}
	})
	return srv.Client
}

// agent simulates a node's kubelet with client-go: it registers the node
// with a Ready status and its lease, and renews the lease until paused.
type agent struct {
	t      *testing.T
	c      kubernetes.Interface
	name   string
	mu     sync.Mutex
	paused bool
}

func startAgent(t *testing.T, ctx context.Context, c kubernetes.Interface, name string) *agent {
	t.Helper()
	a := &agent{t: t, c: c, name: name}
	now := metav1.Now()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now,
		}}},
	}
	n, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating node: %v", err)
	}
	holder, duration, renew := name, int32(40), metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Node", Name: name, UID: n.UID,
		}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration, RenewTime: &renew},
	}
	if _, err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating lease: %v", err)
	}
	var wg sync.WaitGroup
	loopCtx, cancel := context.WithCancel(ctx)
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-loopCtx.Done():
				return
			case <-tick.C:
			}
			a.mu.Lock()
			paused := a.paused
			a.mu.Unlock()
			if !paused {
				if err := a.renew(loopCtx); err != nil && loopCtx.Err() == nil {
					t.Errorf("renewing lease of %s: %v", name, err)
				}
			}
		}
	}()
	return a
}

func (a *agent) setPaused(p bool) {
	a.mu.Lock()
	a.paused = p
	a.mu.Unlock()
}

func (a *agent) renew(ctx context.Context) error {
	leases := a.c.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := leases.Get(ctx, a.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.NewMicroTime(time.Now())
		l.Spec.RenewTime = &now
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
}

// postReady is the kubelet posting Ready=True with a fresh heartbeat.
func (a *agent) postReady(ctx context.Context) {
	a.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := a.c.CoreV1().Nodes().Get(ctx, a.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		for i := range n.Status.Conditions {
			cond := &n.Status.Conditions[i]
			if cond.Type == corev1.NodeReady {
				if cond.Status != corev1.ConditionTrue {
					cond.LastTransitionTime = now
				}
				cond.Status, cond.Reason, cond.Message, cond.LastHeartbeatTime = corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status", now
			}
		}
		_, err = a.c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		a.t.Fatalf("posting status of %s: %v", a.name, err)
	}
}

// waitNode polls the node until ok accepts it.
func waitNode(t *testing.T, ctx context.Context, c kubernetes.Interface, name string, within time.Duration, what string, ok func(*corev1.Node) bool) *corev1.Node {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("getting node %s: %v", name, err)
		}
		if ok(n) {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s: not %s within %v; conditions %+v taints %+v", name, what, within, n.Status.Conditions, n.Spec.Taints)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func ready(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func taintSet(n *corev1.Node) []string {
	var out []string
	for _, t := range n.Spec.Taints {
		out = append(out, t.Key+":"+string(t.Effect))
	}
	return out
}

const (
	unreachableNoSchedule = corev1.TaintNodeUnreachable + ":NoSchedule"
	unreachableNoExecute  = corev1.TaintNodeUnreachable + ":NoExecute"
)

// TestNodeFailureAndRecovery is test/e2e's failing-node scenario
// (node_failure_test.go) with short periods: a node
// that stops renewing its lease becomes Ready=Unknown with the unreachable
// taints and a NodeNotReady event; when it renews and posts status again
// the taints go away. A second node keeps the cluster out of the
// all-nodes-down mode.
func TestNodeFailureAndRecovery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := startServer(t)
	startAgent(t, ctx, c, "healthy")
	a := startAgent(t, ctx, c, "worker")

	// Lease renewals alone keep the node alive well past the grace period
	// (its Ready heartbeat never changes).
	time.Sleep(gracePeriod + time.Second)
	n, err := c.CoreV1().Nodes().Get(ctx, "worker", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := ready(n); r.Status != corev1.ConditionTrue || len(n.Spec.Taints) != 0 {
		t.Fatalf("renewing node: Ready %s, taints %v", r.Status, taintSet(n))
	}

	a.setPaused(true)
	stopped := time.Now()
	n = waitNode(t, ctx, c, "worker", gracePeriod+5*time.Second, "Unknown", func(n *corev1.Node) bool {
		return ready(n).Status == corev1.ConditionUnknown
	})
	if took := time.Since(stopped); took < gracePeriod-500*time.Millisecond {
		t.Errorf("marked Unknown %v after the last renewal, before the %v grace period", took, gracePeriod)
	}
	r := ready(n)
	if r.Reason != "NodeStatusUnknown" || r.Message != "Kubelet stopped posting node status." {
		t.Errorf("Ready condition %+v", r)
	}
	n = waitNode(t, ctx, c, "worker", 3*time.Second, "tainted unreachable", func(n *corev1.Node) bool {
		ts := taintSet(n)
		return slices.Contains(ts, unreachableNoSchedule) && slices.Contains(ts, unreachableNoExecute)
	})
	for _, tt := range n.Spec.Taints {
		if tt.TimeAdded == nil {
			t.Errorf("taint %s:%s without timeAdded", tt.Key, tt.Effect)
		}
	}
	if h, _ := c.CoreV1().Nodes().Get(ctx, "healthy", metav1.GetOptions{}); ready(h).Status != corev1.ConditionTrue {
		t.Errorf("the healthy node is %s", ready(h).Status)
	}
	waitEvent(t, ctx, c, "worker", "NodeNotReady", "Node worker status is now: NodeNotReady")
	waitEvent(t, ctx, c, "worker", "RegisteredNode", "Node worker event: Registered Node worker in Controller")

	// Back: the agent renews and posts Ready.
	a.setPaused(false)
	a.postReady(ctx)
	waitNode(t, ctx, c, "worker", 3*time.Second, "Ready without taints", func(n *corev1.Node) bool {
		return ready(n).Status == corev1.ConditionTrue && len(n.Spec.Taints) == 0
	})

	// Deleting the node: RemovingNode (the garbage collector then deletes
	// the lease, so the agent stops renewing).
	a.setPaused(true)
	if err := c.CoreV1().Nodes().Delete(ctx, "worker", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ctx, c, "worker", "RemovingNode", "Node worker event: Removing Node worker from Controller")
}

// TestAllNodesSilentGetNoNoExecuteTaint: when every node goes silent at
// once the fault is probably the server's, so they are marked Unknown and
// tainted NoSchedule, but never NoExecute.
func TestAllNodesSilentGetNoNoExecuteTaint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := startServer(t)
	a := startAgent(t, ctx, c, "n1")
	b := startAgent(t, ctx, c, "n2")
	time.Sleep(500 * time.Millisecond)
	a.setPaused(true)
	b.setPaused(true)
	for _, name := range []string{"n1", "n2"} {
		waitNode(t, ctx, c, name, gracePeriod+5*time.Second, "Unknown and tainted NoSchedule", func(n *corev1.Node) bool {
			return ready(n).Status == corev1.ConditionUnknown && slices.Contains(taintSet(n), unreachableNoSchedule)
		})
	}
	// Several monitor and tainting periods later: still no NoExecute taint.
	time.Sleep(10 * monitorPeriod)
	for _, name := range []string{"n1", "n2"} {
		n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(taintSet(n), unreachableNoExecute) {
			t.Errorf("%s tainted NoExecute while every node is down: %v", name, taintSet(n))
		}
	}
}

// waitEvent waits for an event about node name with reason and message,
// from the node-controller, in the default namespace.
func waitEvent(t *testing.T, ctx context.Context, c kubernetes.Interface, name, reason, message string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		evs, err := c.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("listing events: %v", err)
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "Node" && e.InvolvedObject.Name == name && e.Reason == reason {
				if e.Message != message || e.Source.Component != nodelifecycle.EventSource || e.Type != corev1.EventTypeNormal {
					t.Fatalf("event %s: message %q source %q type %s", reason, e.Message, e.Source.Component, e.Type)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s event for node %s", reason, name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStatusHeartbeatsAloneKeepNodeReady: a node whose lease stopped but
// that keeps posting status with fresh Ready heartbeats stays Ready, so the
// controller sees each new version of a node; when the heartbeats stop too
// it goes Unknown.
func TestStatusHeartbeatsAloneKeepNodeReady(t *testing.T) {
	ctx := context.Background()
	c := startServer(t)
	a := startAgent(t, ctx, c, "posting")
	a.setPaused(true)
	until := time.Now().Add(3 * gracePeriod)
	for time.Now().Before(until) {
		a.postReady(ctx)
		n, err := c.CoreV1().Nodes().Get(ctx, "posting", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cond := ready(n); cond == nil || cond.Status != corev1.ConditionTrue {
			t.Fatalf("a node posting Ready heartbeats was marked %+v", cond)
		}
		time.Sleep(300 * time.Millisecond)
	}
	waitNode(t, ctx, c, "posting", 3*gracePeriod, "Ready=Unknown once silent", func(n *corev1.Node) bool {
		cond := ready(n)
		return cond != nil && cond.Status == corev1.ConditionUnknown
	})
}
