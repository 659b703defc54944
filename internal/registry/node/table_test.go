package node_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/registry/node"
)

func TestStatusCell(t *testing.T) {
	ready := func(s corev1.ConditionStatus) []corev1.NodeCondition {
		return []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeReady, Status: s},
		}
	}
	for _, tc := range []struct {
		name          string
		conditions    []corev1.NodeCondition
		unschedulable bool
		want          string
	}{
		{"ready", ready(corev1.ConditionTrue), false, "Ready"},
		{"not ready", ready(corev1.ConditionFalse), false, "NotReady"},
		// kubectl prints a Ready=Unknown node (lease expired) as NotReady.
		{"ready unknown", ready(corev1.ConditionUnknown), false, "NotReady"},
		{"no ready condition", nil, false, "Unknown"},
		{"cordoned", ready(corev1.ConditionTrue), true, "Ready,SchedulingDisabled"},
		{"cordoned without condition", nil, true, "Unknown,SchedulingDisabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &corev1.Node{Spec: corev1.NodeSpec{Unschedulable: tc.unschedulable}, Status: corev1.NodeStatus{Conditions: tc.conditions}}
			if got := node.Status(n); got != tc.want {
				t.Errorf("Status = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRolesCell(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"none", map[string]string{"kubernetes.io/hostname": "a"}, "<none>"},
		{"prefix", map[string]string{"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/control-plane": "true"}, "control-plane,worker"},
		{"empty role after prefix ignored", map[string]string{"node-role.kubernetes.io/": ""}, "<none>"},
		{"legacy label", map[string]string{"kubernetes.io/role": "master"}, "master"},
		{"legacy empty ignored", map[string]string{"kubernetes.io/role": ""}, "<none>"},
		{"both forms deduplicated", map[string]string{"kubernetes.io/role": "worker", "node-role.kubernetes.io/worker": ""}, "worker"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}}
			if got := node.Roles(n); got != tc.want {
				t.Errorf("Roles = %q, want %q", got, tc.want)
			}
		})
	}
}
