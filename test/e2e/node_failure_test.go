package e2e

// Scenario 2 (a failing node): an agent that stops heartbeating — frozen with
// SIGSTOP, or killed with SIGKILL — is marked Unknown by the node lifecycle
// controller after the grace period, tainted unreachable and reported with
// a NodeNotReady event; when it heartbeats again, Ready and the taints
// follow.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/leasehold/leasehold/internal/testdeps"
	"github.com/leasehold/leasehold/internal/testdeps/nodeenv"
)

// TestNodeFailureFastTimings freezes one agent and kills another while a
// third stays healthy (so the zone is not fully disrupted and NoExecute
// taints are added), with shortened timings.
func TestNodeFailureFastTimings(t *testing.T) {
	t.Parallel()
	c := newNodeCluster(t, fastServerArgs...)
	names := nodeenv.Names("fail", 3)
	frozen, killed, healthy := names[0], names[1], names[2]
	agents := c.startAgents(names, fastAgentArgs...)
	nodes := map[string]*corev1.Node{}
	for _, n := range names {
		nodes[n], _ = c.WaitRegistered(n, fastSlack, fastRenew+fastSlack)
	}
	c.waitKubectlNodeStatus(map[string]string{frozen: "Ready", killed: "Ready", healthy: "Ready"}, fastSlack)

	stoppedAt := time.Now()
	agents[0].Pause()
	agents[1].Kill()

	// After the grace period: Unknown, both unreachable taints (the second
	// node's NoExecute waits for the zone's tainting rate), an event.
	bound := fastRenew + fastGrace + fastMonitor + evictionGap + fastSlack
	for _, n := range []string{frozen, killed} {
		node := c.waitUnreachable(n, bound)
		checkUnknownConditions(t, node, stoppedAt)
		c.waitNodeEvent(n, "NodeNotReady", fmt.Sprintf("Node %s status is now: NodeNotReady", n), fastSlack)
	}
	if n := c.WaitReady(healthy, time.Second); n.UID != nodes[healthy].UID {
		t.Errorf("healthy node %s was re-created", healthy)
	}
	c.waitKubectlNodeStatus(map[string]string{frozen: "NotReady", killed: "NotReady", healthy: "Ready"}, fastSlack)
	checkDescribeUnreachable(t, c, frozen)

	// Heartbeats again: the frozen agent resumes, the killed one restarts.
	agents[0].Resume()
	agents[1].Restart()
	for _, n := range []string{frozen, killed} {
		node := c.WaitReady(n, fastStatusUpdate+fastMonitor+fastSlack)
		if node.UID != nodes[n].UID {
			t.Errorf("node %s re-created (uid %s -> %s): the agent must reuse its registered Node", n, nodes[n].UID, node.UID)
		}
		if len(node.Spec.Taints) != 0 {
			t.Errorf("node %s still has taints %+v", n, node.Spec.Taints)
		}
		// The lease is the same object, owned by the same Node, renewed
		// after the agent came back.
		lease := c.WaitOwnedLease(n, nodes[n].UID, fastSlack)
		if lease.Spec.RenewTime == nil || lease.Spec.RenewTime.Time.Before(stoppedAt.Add(fastGrace)) {
			t.Errorf("lease %s renewTime %v: not renewed since the agent came back", n, lease.Spec.RenewTime)
		}
	}
	c.waitKubectlNodeStatus(map[string]string{frozen: "Ready", killed: "Ready", healthy: "Ready"}, fastSlack)
}

// TestNodeFailureDefaultTimings is the one test at the shipped timings:
// a 40 s lease renewed every 10 s, 50 s grace, 5 s monitor period. One of
// two agents is frozen; it must go Unknown no sooner than the grace period
// after its last renewal and not much later, and come back when resumed.
func TestNodeFailureDefaultTimings(t *testing.T) {
	const (
		grace         = 50 * time.Second
		monitorPeriod = 5 * time.Second
		renew         = 10 * time.Second
		statusUpdate  = 10 * time.Second
		// renewJitter: the agent's renew loop is jittered by up to 4%.
		renewJitter = renew * 4 / 100
	)
	t.Parallel()
	c := newNodeCluster(t)
	names := nodeenv.Names("default", 2)
	frozen, healthy := names[0], names[1]
	agents := c.startAgents(names)
	var frozenNode *corev1.Node
	for _, n := range names {
		node, lease := c.WaitRegistered(n, fastSlack, renew+fastSlack)
		if d := lease.Spec.LeaseDurationSeconds; d == nil || *d != 40 {
			t.Errorf("lease %s leaseDurationSeconds = %v, want the default 40", n, d)
		}
		if n == frozen {
			frozenNode = node
		}
	}

	stoppedAt := time.Now()
	agents[0].Pause()
	node := c.waitUnreachable(frozen, renew+renewJitter+grace+monitorPeriod+fastSlack)
	unknownSeen := time.Since(stoppedAt)
	checkUnknownConditions(t, node, stoppedAt)
	lease, err := c.Lease(frozen)
	if err != nil {
		t.Fatalf("lease of the frozen node: %v", err)
	}
	lastRenew := lease.Spec.RenewTime.Time
	if lastRenew.After(stoppedAt) {
		t.Fatalf("frozen agent renewed its lease at %v, after SIGSTOP at %v", lastRenew, stoppedAt)
	}
	// The transition comes at least the grace period after the last
	// renewal (condition times have second precision) and at most a monitor
	// period later: the pass that saw the renewal starts the grace, and the
	// pass one grace later marks the node (plus slack for the write).
	transition := nodeenv.ReadyCondition(node).LastTransitionTime.Time
	if early := lastRenew.Add(grace - time.Second); transition.Before(early) {
		t.Errorf("Ready=Unknown at %v, only %v after the last renewal at %v; the grace period is %v", transition, transition.Sub(lastRenew), lastRenew, grace)
	}
	if late := lastRenew.Add(grace + monitorPeriod + 3*time.Second); transition.After(late) {
		t.Errorf("Ready=Unknown at %v, %v after the last renewal at %v; want within about a monitor period of the %v grace", transition, transition.Sub(lastRenew), lastRenew, grace)
	}
	t.Logf("frozen at %s; last renewal %v before; Ready=Unknown %v after the last renewal; observed %v after SIGSTOP",
		stoppedAt.Format(time.RFC3339Nano), stoppedAt.Sub(lastRenew), transition.Sub(lastRenew), unknownSeen)
	for line := range strings.Lines(c.srv.Output()) {
		if strings.Contains(line, frozen) && strings.Contains(line, "stopped posting") {
			t.Logf("server: %s", strings.TrimSpace(line))
		}
	}
	c.waitNodeEvent(frozen, "NodeNotReady", fmt.Sprintf("Node %s status is now: NodeNotReady", frozen), fastSlack)
	c.WaitReady(healthy, time.Second)
	c.waitKubectlNodeStatus(map[string]string{frozen: "NotReady", healthy: "Ready"}, fastSlack)

	resumedAt := time.Now()
	agents[0].Resume()
	back := c.WaitReady(frozen, statusUpdate+renewJitter+monitorPeriod+fastSlack)
	t.Logf("Ready=True without taints %v after SIGCONT", time.Since(resumedAt))
	if back.UID != frozenNode.UID {
		t.Errorf("node re-created (uid %s -> %s)", frozenNode.UID, back.UID)
	}
	c.waitKubectlNodeStatus(map[string]string{frozen: "Ready", healthy: "Ready"}, fastSlack)
}

// checkDescribeUnreachable checks `kubectl describe node` of an unreachable
// node: its taints, the Unknown Ready condition and the NodeNotReady event.
func checkDescribeUnreachable(t *testing.T, c *nodeCluster, name string) {
	t.Helper()
	out := c.kubectl.run("describe", "node", name)
	for _, want := range []string{
		"Name:               " + name,
		"Taints:             node.kubernetes.io/unreachable:",
		"node.kubernetes.io/unreachable:NoExecute",
		"node.kubernetes.io/unreachable:NoSchedule",
		"Conditions:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl describe node %s lacks %q:\n%s", name, want, out)
		}
	}
	if !hasLineWith(out, "Ready", "Unknown", reasonStatusUnknown, messageStatusUnknown) {
		t.Errorf("kubectl describe node %s: no Ready Unknown %s condition line:\n%s", name, reasonStatusUnknown, out)
	}
	if !hasLineWith(out, "Normal", "NodeNotReady", "node-controller", "Node "+name+" status is now: NodeNotReady") {
		t.Errorf("kubectl describe node %s: no NodeNotReady event line from node-controller:\n%s", name, out)
	}
}

// hasLineWith says whether some line of out contains every one of parts.
func hasLineWith(out string, parts ...string) bool {
	for line := range strings.Lines(out) {
		if testdeps.ContainsAll(line, parts...) {
			return true
		}
	}
	return false
}
