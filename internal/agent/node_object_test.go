package agent

import (
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestInitialNode(t *testing.T) {
	cfg := DefaultConfig("node-a")
	cfg.Version = "leasehold-v1.2.3"
	cfg.NodeLabels = map[string]string{
		"topology.kubernetes.io/zone": "z1",
		corev1.LabelHostname:          "someone-else", // must not win
	}
	now := time.Unix(1712285320, 0)
	n := InitialNode(cfg, now)
	wantLabels := map[string]string{
		"topology.kubernetes.io/zone": "z1",
		"kubernetes.io/hostname":      "node-a",
		"kubernetes.io/os":            runtime.GOOS,
		"kubernetes.io/arch":          runtime.GOARCH,
	}
	if len(n.Labels) != len(wantLabels) {
		t.Fatalf("labels = %v, want %v", n.Labels, wantLabels)
	}
	for k, v := range wantLabels {
		if n.Labels[k] != v {
			t.Fatalf("label %s = %q, want %q (all: %v)", k, n.Labels[k], v, n.Labels)
		}
	}
	if cfg.NodeLabels[corev1.LabelHostname] != "someone-else" {
		t.Fatal("InitialNode mutated the config's labels")
	}
	if n.Status.NodeInfo.KubeletVersion != "leasehold-v1.2.3" || n.Status.NodeInfo.OperatingSystem != runtime.GOOS || n.Status.NodeInfo.Architecture != runtime.GOARCH {
		t.Fatalf("nodeInfo = %+v", n.Status.NodeInfo)
	}
	ready := findCondition(n.Status.Conditions, corev1.NodeReady)
	if ready == nil {
		t.Fatal("no Ready condition")
	}
	if ready.Status != corev1.ConditionTrue || ready.Reason != "KubeletReady" || ready.Message != "kubelet is posting ready status" {
		t.Fatalf("Ready = %+v", ready)
	}
	if !ready.LastHeartbeatTime.Time.Equal(now) || !ready.LastTransitionTime.Time.Equal(now) {
		t.Fatalf("Ready times = %v / %v, want both %v", ready.LastHeartbeatTime, ready.LastTransitionTime, now)
	}
	for _, typ := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
		if c := findCondition(n.Status.Conditions, typ); c == nil || c.Status != corev1.ConditionFalse {
			t.Fatalf("%s = %+v, want False", typ, c)
		}
	}
}

// TestSetNodeStatusTransitions: the heartbeat always moves, the transition
// time only when the status changes (for example Unknown, set by the node
// lifecycle controller while the agent was down, back to True).
func TestSetNodeStatusTransitions(t *testing.T) {
	cfg := DefaultConfig("node-a")
	t0, t1 := time.Unix(1000, 0), time.Unix(2000, 0)
	tests := []struct {
		name           string
		prior          corev1.ConditionStatus
		wantTransition time.Time
	}{
		{"still ready keeps transition time", corev1.ConditionTrue, t0},
		{"unknown to ready moves transition time", corev1.ConditionUnknown, t1},
		{"not ready to ready moves transition time", corev1.ConditionFalse, t1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: tt.prior, Reason: "NodeStatusUnknown",
				LastHeartbeatTime: metav1.NewTime(t0), LastTransitionTime: metav1.NewTime(t0),
			}}}}
			setNodeStatus(node, cfg, t1)
			ready := findCondition(node.Status.Conditions, corev1.NodeReady)
			if ready.Status != corev1.ConditionTrue || ready.Reason != "KubeletReady" {
				t.Fatalf("Ready = %+v", ready)
			}
			if !ready.LastHeartbeatTime.Time.Equal(t1) {
				t.Fatalf("heartbeat = %v, want %v", ready.LastHeartbeatTime, t1)
			}
			if !ready.LastTransitionTime.Time.Equal(tt.wantTransition) {
				t.Fatalf("transition = %v, want %v", ready.LastTransitionTime, tt.wantTransition)
			}
			if len(node.Status.Conditions) != len(healthyConditions) {
				t.Fatalf("conditions = %d, want %d", len(node.Status.Conditions), len(healthyConditions))
			}
		})
	}
}

func TestReconcileDefaultLabels(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
		"kubernetes.io/hostname": "stale", "team": "a",
	}}}
	if !reconcileDefaultLabels(node, "node-a") {
		t.Fatal("stale hostname label not reported as a change")
	}
	if node.Labels["kubernetes.io/hostname"] != "node-a" || node.Labels["team"] != "a" || node.Labels["kubernetes.io/os"] != runtime.GOOS {
		t.Fatalf("labels after reconcile = %v", node.Labels)
	}
	if reconcileDefaultLabels(node, "node-a") {
		t.Fatal("second reconcile reported a change")
	}
	if !reconcileDefaultLabels(&corev1.Node{}, "node-a") {
		t.Fatal("node without labels not reported as a change")
	}
}
