package agent

import (
	"maps"
	"runtime"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// conditionSpec is one node condition the agent asserts, with the kubelet's
// reason and message for the healthy state.
type conditionSpec struct {
	Type    corev1.NodeConditionType
	Status  corev1.ConditionStatus
	Reason  string
	Message string
}

// healthyConditions are what a healthy kubelet posts. The pressure
// conditions are included because the node lifecycle controller sets them to
// Unknown too, and only the agent can bring them back.
var healthyConditions = [...]conditionSpec{
	{corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
	{corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
	{corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
	{corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"},
}

// defaultNodeLabels are the well-known labels the kubelet always sets, and
// forces back at registration if someone changed them.
func defaultNodeLabels(nodeName string) map[string]string {
	return map[string]string{
		corev1.LabelHostname:   nodeName,
		corev1.LabelOSStable:   runtime.GOOS,
		corev1.LabelArchStable: runtime.GOARCH,
	}
}

// InitialNode is the Node the agent registers: labels (user labels first, so
// the well-known ones cannot be overridden) and a status computed at now.
func InitialNode(cfg Config, now time.Time) *corev1.Node {
	labels := maps.Clone(cfg.NodeLabels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, defaultNodeLabels(cfg.NodeName))
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: cfg.NodeName, Labels: labels},
	}
	setNodeStatus(node, cfg, now)
	return node
}

// setNodeStatus writes the agent's view of the node into node.Status at now.
// Each condition's lastHeartbeatTime becomes now; lastTransitionTime moves
// only when the condition's status changes, so observers can tell how long
// a node has been Ready.
func setNodeStatus(node *corev1.Node, cfg Config, now time.Time) {
	node.Status.NodeInfo.KubeletVersion = cfg.Version
	node.Status.NodeInfo.OperatingSystem = runtime.GOOS
	node.Status.NodeInfo.Architecture = runtime.GOARCH
	ts := metav1.NewTime(now)
	for _, spec := range healthyConditions {
		cond := findCondition(node.Status.Conditions, spec.Type)
		if cond == nil {
			node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: spec.Type})
			cond = &node.Status.Conditions[len(node.Status.Conditions)-1]
		}
		if cond.Status != spec.Status || cond.LastTransitionTime.IsZero() {
			cond.LastTransitionTime = ts
		}
		cond.Status = spec.Status
		cond.Reason = spec.Reason
		cond.Message = spec.Message
		cond.LastHeartbeatTime = ts
	}
}

func findCondition(conds []corev1.NodeCondition, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// reconcileDefaultLabels forces the well-known labels of an existing Node to
// the agent's values, as the kubelet does when it finds its Node already
// registered. It reports whether anything changed.
func reconcileDefaultLabels(node *corev1.Node, nodeName string) bool {
	changed := false
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	for k, v := range defaultNodeLabels(nodeName) {
		if node.Labels[k] != v {
			node.Labels[k] = v
			changed = true
		}
	}
	return changed
}

// readyStatus is the node's Ready condition status, or "" if it has none.
func readyStatus(node *corev1.Node) corev1.ConditionStatus {
	if c := findCondition(node.Status.Conditions, corev1.NodeReady); c != nil {
		return c.Status
	}
	return ""
}
