package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/leasehold/leasehold/internal/testdeps"
	"github.com/leasehold/leasehold/internal/testdeps/nodeenv"
)

// Shortened timings for the node scenarios: an 8 s lease renewed every 2 s,
// node status computed every 2 s but (as for the kubelet) reported only on
// change or every minute, so the lease is what keeps a node alive; the node
// lifecycle controller looks every second and gives 10 s of grace.
var (
	fastServerArgs = []string{"--node-monitor-period", "1s", "--node-monitor-grace-period", "10s", "--node-startup-grace-period", "10s"}
	fastAgentArgs  = []string{"--node-lease-duration-seconds", "8", "--node-status-update-frequency", "2s", "--node-status-report-frequency", "1m"}
)

const (
	fastGrace        = 10 * time.Second
	fastRenew        = 2 * time.Second
	fastMonitor      = time.Second
	fastStatusUpdate = 2 * time.Second
	// fastSlack absorbs process start-up and scheduling on a loaded
	// 2-core machine; it bounds waits, it is never slept.
	fastSlack = 15 * time.Second
	// evictionGap is the NoExecute tainting rate's interval (0.1 node/s per
	// zone, burst 1): the second node of a zone to become unreachable gets
	// its NoExecute taint up to this much after the first.
	evictionGap = 10 * time.Second
)

// Messages the node lifecycle controller writes (reference §3.2, §3.3).
const (
	reasonStatusUnknown  = "NodeStatusUnknown"
	messageStatusUnknown = "Kubelet stopped posting node status."
)

// nodeCluster is one `leasehold serve` process with its controllers, the
// node harness on it (nodeenv, shared with internal/agent's tests) and the
// newest kubectl, for the node scenarios.
type nodeCluster struct {
	*nodeenv.Env
	t       *testing.T
	srv     *serverProc
	kubectl *kubectlRunner
}

func newNodeCluster(t *testing.T, serverArgs ...string) *nodeCluster {
	t.Helper()
	bin := newestKubectl(t)
	srv := startServer(t, serverArgs...)
	// The harness's client is made after the server, so its connections
	// are closed (cleanups run last first) before the server stops.
	env := nodeenv.New(t, srv.Kubeconfig, "leasehold-e2e-nodes")
	return &nodeCluster{Env: env, t: t, srv: srv, kubectl: newKubectl(t, bin, srv)}
}

// newestKubectl is the highest kubectl version installed: the node
// scenarios check what a user of today's kubectl sees; TestKubectl covers
// the version matrix.
func newestKubectl(t *testing.T) kubectlBinary {
	t.Helper()
	bins := kubectlBinaries(t)
	for i := len(bins) - 1; i >= 0; i-- {
		if bins[i].Path != "" {
			return bins[i]
		}
	}
	t.Skip("SKIP: no versioned kubectl (kubectl.1.N) installed next to kubectl")
	return kubectlBinary{}
}

// startAgents starts one agent per name against the cluster with args,
// each with its own node credential (`leasehold credentials node NAME`:
// user system:node:NAME in system:nodes), so the scenarios run through the
// Node authorizer and NodeRestriction exactly as real kubelets do.
func (c *nodeCluster) startAgents(names []string, args ...string) []*agentProc {
	c.t.Helper()
	agents := make([]*agentProc, len(names))
	for i, n := range names {
		agents[i] = startAgent(c.t, n, nodeCredentials(c.t, c.srv, n), args...)
	}
	return agents
}

// waitUnreachable waits until the node lifecycle controller has marked the
// node Unknown and tainted it unreachable with both effects, and returns it.
func (c *nodeCluster) waitUnreachable(name string, timeout time.Duration) *corev1.Node {
	c.t.Helper()
	var node *corev1.Node
	testdeps.Eventually(c.t, timeout, 200*time.Millisecond, "node "+name+" Ready=Unknown with unreachable NoSchedule and NoExecute taints", func() error {
		n, err := c.Node(name)
		if err != nil {
			return err
		}
		r := nodeenv.ReadyCondition(n)
		if r == nil || r.Status != corev1.ConditionUnknown {
			return fmt.Errorf("Ready condition = %+v", r)
		}
		if got := effectsOf(taintsWithKey(n, corev1.TaintNodeUnreachable)); got != "NoExecute,NoSchedule" {
			return fmt.Errorf("unreachable taint effects = %q (taints %+v)", got, n.Spec.Taints)
		}
		node = n
		return nil
	})
	return node
}

// checkUnknownConditions checks what the controller wrote into Ready: the
// kube-controller-manager's reason and message, a fresh transition.
func checkUnknownConditions(t *testing.T, n *corev1.Node, notBefore time.Time) {
	t.Helper()
	r := nodeenv.ReadyCondition(n)
	if r.Reason != reasonStatusUnknown || r.Message != messageStatusUnknown {
		t.Errorf("node %s Ready = %s/%q, want %s/%q", n.Name, r.Reason, r.Message, reasonStatusUnknown, messageStatusUnknown)
	}
	// Condition times have second precision.
	if r.LastTransitionTime.Time.Before(notBefore.Truncate(time.Second)) {
		t.Errorf("node %s Ready lastTransitionTime %v is before the agent stopped (%v)", n.Name, r.LastTransitionTime, notBefore)
	}
}

func taintsWithKey(n *corev1.Node, key string) []corev1.Taint {
	var out []corev1.Taint
	for _, tn := range n.Spec.Taints {
		if tn.Key == key {
			out = append(out, tn)
		}
	}
	return out
}

// effectsOf lists the taints' effects sorted, comma-separated.
func effectsOf(ts []corev1.Taint) string {
	var effects []string
	for _, tn := range ts {
		effects = append(effects, string(tn.Effect))
	}
	slices.Sort(effects)
	return strings.Join(effects, ",")
}

// nodeEvents lists the events about node name, in every namespace, oldest
// first as the server returns them.
func (c *nodeCluster) nodeEvents(name string) ([]corev1.Event, error) {
	ctx, cancel := context.WithTimeout(context.Background(), nodeenv.RequestTimeout)
	defer cancel()
	sel := fields.Set{"involvedObject.kind": "Node", "involvedObject.name": name}.AsSelector().String()
	list, err := c.Client.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list events of node %s: %w", name, err)
	}
	return list.Items, nil
}

// waitNodeEvent waits for an event with reason about node name whose
// message is message, and returns it.
func (c *nodeCluster) waitNodeEvent(name, reason, message string, timeout time.Duration) corev1.Event {
	c.t.Helper()
	var found corev1.Event
	testdeps.Eventually(c.t, timeout, 200*time.Millisecond, "event "+reason+" for node "+name, func() error {
		events, err := c.nodeEvents(name)
		if err != nil {
			return err
		}
		var seen []string
		for _, e := range events {
			if e.Reason == reason && e.Message == message {
				found = e
				return nil
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return fmt.Errorf("events so far: %q", seen)
	})
	return found
}

// kubectlNodeStatus returns the STATUS column of `kubectl get nodes` per
// node name, after checking the header is the seed's.
func (c *nodeCluster) kubectlNodeStatus() map[string]string {
	c.t.Helper()
	rows := tableRows(c.kubectl.run("get", "nodes"))
	if len(rows) == 0 || strings.Join(rows[0], " ") != "NAME STATUS ROLES AGE VERSION" {
		c.t.Fatalf("kubectl get nodes header = %v, want NAME STATUS ROLES AGE VERSION", rows)
	}
	out := map[string]string{}
	for _, r := range rows[1:] {
		if len(r) != 5 {
			c.t.Fatalf("kubectl get nodes row %v: want 5 columns", r)
		}
		out[r[0]] = r[1]
	}
	return out
}

// waitKubectlNodeStatus waits until `kubectl get nodes` shows exactly want
// (node name -> STATUS).
func (c *nodeCluster) waitKubectlNodeStatus(want map[string]string, timeout time.Duration) {
	c.t.Helper()
	testdeps.Eventually(c.t, timeout, 200*time.Millisecond, fmt.Sprintf("kubectl get nodes shows %v", want), func() error {
		got := c.kubectlNodeStatus()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("kubectl get nodes shows %v", got)
		}
		return nil
	})
}

// kubectlLeaseHolders returns `kubectl get lease -n kube-node-lease` as
// NAME -> HOLDER, after checking the header and every AGE cell.
func (c *nodeCluster) kubectlLeaseHolders() map[string]string {
	c.t.Helper()
	rows := tableRows(c.kubectl.run("get", "lease", "-n", corev1.NamespaceNodeLease))
	if len(rows) == 0 {
		return map[string]string{}
	}
	if strings.Join(rows[0], " ") != "NAME HOLDER AGE" {
		c.t.Fatalf("kubectl get lease header = %v, want NAME HOLDER AGE", rows[0])
	}
	out := map[string]string{}
	for _, r := range rows[1:] {
		if len(r) != 3 || !ageRE.MatchString(r[2]) {
			c.t.Fatalf("kubectl get lease row %v: want NAME HOLDER AGE", r)
		}
		out[r[0]] = r[1]
	}
	return out
}
