package agent

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

func registeredNode(t *testing.T, at time.Time) *corev1.Node {
	t.Helper()
	n := InitialNode(DefaultConfig("node-a"), at)
	n.UID = "uid-1"
	n.ResourceVersion = "7"
	n.Spec.PodCIDR = "10.0.0.0/24"
	return n
}

func TestNodeStatusChanged(t *testing.T) {
	t0, t1 := time.Unix(1000, 0), time.Unix(1010, 0)
	cfg := DefaultConfig("node-a")
	tests := []struct {
		name   string
		mutate func(old *corev1.Node)
		want   bool
	}{
		{"heartbeat only", func(*corev1.Node) {}, false},
		{"ready went unknown", func(old *corev1.Node) {
			c := findCondition(old.Status.Conditions, corev1.NodeReady)
			c.Status, c.Reason, c.Message = corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status."
		}, true},
		{"condition missing", func(old *corev1.Node) { old.Status.Conditions = old.Status.Conditions[:1] }, true},
		{"conditions reordered", func(old *corev1.Node) {
			c := old.Status.Conditions
			c[0], c[len(c)-1] = c[len(c)-1], c[0]
		}, false},
		{"version upgraded", func(old *corev1.Node) { old.Status.NodeInfo.KubeletVersion = "leasehold-v0.0.1" }, true},
		// A condition owned by someone else (a network plugin) is kept as is.
		{"foreign condition kept", func(old *corev1.Node) {
			old.Status.Conditions = append(old.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse})
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := registeredNode(t, t0)
			tt.mutate(old)
			wanted := old.DeepCopy()
			setNodeStatus(wanted, cfg, t1)
			if got := nodeStatusChanged(&old.Status, &wanted.Status); got != tt.want {
				t.Fatalf("nodeStatusChanged = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestShouldPatchStatus(t *testing.T) {
	now := time.Unix(10_000, 0)
	const freq = 5 * time.Minute
	tests := []struct {
		name       string
		changed    bool
		attempt    int
		lastReport time.Time
		delay      time.Duration
		want       bool
	}{
		{"first report after start", false, 0, time.Time{}, 0, true},
		{"unchanged, recent", false, 0, now.Add(-10 * time.Second), 0, false},
		{"unchanged, just under period", false, 0, now.Add(-freq + time.Second), 0, false},
		{"unchanged, period reached", false, 0, now.Add(-freq), 0, true},
		{"changed, recent", true, 0, now.Add(-10 * time.Second), 0, true},
		{"retry always patches", false, 1, now.Add(-10 * time.Second), 0, true},
		{"negative spread brings report forward", false, 0, now.Add(-3 * time.Minute), -2 * time.Minute, true},
		{"positive spread pushes report back", false, 0, now.Add(-6 * time.Minute), 2 * time.Minute, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := shouldPatchStatus(tt.changed, tt.attempt, tt.lastReport, now, freq, tt.delay); got != tt.want {
				t.Fatalf("shouldPatchStatus = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSpreadDelayBounds(t *testing.T) {
	const freq = 5 * time.Minute
	if got := spreadDelay(freq, 0); got != -150*time.Second {
		t.Fatalf("spreadDelay(u=0) = %s, want -2m30s", got)
	}
	if got := spreadDelay(freq, 0.5); got != 0 {
		t.Fatalf("spreadDelay(u=0.5) = %s, want 0", got)
	}
	for u := 0.0; u < 1; u += 0.01 {
		if d := spreadDelay(freq, u); d < -freq/2 || d >= freq/2 {
			t.Fatalf("spreadDelay(u=%v) = %s, outside [-2m30s, 2m30s)", u, d)
		}
	}
}

// TestNodeStatusPatchApplies builds the patch for a heartbeat-and-recovery
// and applies it the way a server does: the result must carry the new
// status, and the spec and unrelated metadata must be untouched.
func TestNodeStatusPatchApplies(t *testing.T) {
	old := registeredNode(t, time.Unix(1000, 0))
	ready := findCondition(old.Status.Conditions, corev1.NodeReady)
	ready.Status, ready.Reason = corev1.ConditionUnknown, "NodeStatusUnknown"
	old.Spec.Taints = []corev1.Taint{{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoSchedule}}

	wanted := old.DeepCopy()
	setNodeStatus(wanted, DefaultConfig("node-a"), time.Unix(2000, 0))
	wanted.Spec.Taints = nil // the agent must never write the spec through status
	patch, err := nodeStatusPatch(old, wanted)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(patch), `"spec"`) {
		t.Fatalf("patch touches spec: %s", patch)
	}
	oldJSON, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	merged, err := strategicpatch.StrategicMergePatch(oldJSON, patch, corev1.Node{})
	if err != nil {
		t.Fatalf("apply patch %s: %v", patch, err)
	}
	var got corev1.Node
	if err := json.Unmarshal(merged, &got); err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(got.Status, wanted.Status) {
		t.Fatalf("patched status = %+v\nwant %+v", got.Status, wanted.Status)
	}
	if !apiequality.Semantic.DeepEqual(got.Spec, old.Spec) || got.UID != old.UID {
		t.Fatalf("patch changed spec or identity: %+v", got)
	}
}

func TestNodeStatusPatchHeartbeatOnlyIsSmall(t *testing.T) {
	old := registeredNode(t, time.Unix(1000, 0))
	wanted := old.DeepCopy()
	setNodeStatus(wanted, DefaultConfig("node-a"), time.Unix(1300, 0))
	patch, err := nodeStatusPatch(old, wanted)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Metadata map[string]any `json:"metadata"`
		Status   struct {
			Conditions []map[string]any `json:"conditions"`
		} `json:"status"`
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		t.Fatalf("patch %s: %v", patch, err)
	}
	if p.Metadata != nil {
		t.Fatalf("heartbeat patch touches metadata: %s", patch)
	}
	for _, c := range p.Status.Conditions {
		if _, ok := c["lastTransitionTime"]; ok {
			t.Fatalf("heartbeat patch moves a transition time: %s", patch)
		}
		if c["lastHeartbeatTime"] != metav1.NewTime(time.Unix(1300, 0)).UTC().Format(time.RFC3339) {
			t.Fatalf("heartbeat patch condition %v lacks the new heartbeat", c)
		}
	}
	if len(p.Status.Conditions) != len(healthyConditions) {
		t.Fatalf("heartbeat patch has %d conditions, want %d: %s", len(p.Status.Conditions), len(healthyConditions), patch)
	}
}
