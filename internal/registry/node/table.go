package node

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/registry"
)

// The label forms kubectl reads roles from: node-role.kubernetes.io/<role>
// (any value) and kubernetes.io/role=<role>.
const (
	labelNodeRolePrefix = "node-role.kubernetes.io/"
	labelNodeRole       = "kubernetes.io/role"
)

// columns are kube-apiserver's node printer columns. The server always fills
// the wide (priority 1) ones; kubectl shows them only with -o wide.
var columns = []metav1.TableColumnDefinition{
	registry.NameColumn,
	{Name: "Status", Type: "string", Description: "The status of the node"},
	{Name: "Roles", Type: "string", Description: "The roles of the node"},
	registry.AgeColumn,
	{Name: "Version", Type: "string", Description: corev1.NodeSystemInfo{}.SwaggerDoc()["kubeletVersion"]},
	{Name: "Internal-IP", Type: "string", Priority: 1, Description: corev1.NodeStatus{}.SwaggerDoc()["addresses"]},
	{Name: "External-IP", Type: "string", Priority: 1, Description: corev1.NodeStatus{}.SwaggerDoc()["addresses"]},
	{Name: "OS-Image", Type: "string", Priority: 1, Description: corev1.NodeSystemInfo{}.SwaggerDoc()["osImage"]},
	{Name: "Kernel-Version", Type: "string", Priority: 1, Description: corev1.NodeSystemInfo{}.SwaggerDoc()["kernelVersion"]},
	{Name: "Container-Runtime", Type: "string", Priority: 1, Description: corev1.NodeSystemInfo{}.SwaggerDoc()["containerRuntimeVersion"]},
}

func row(n *corev1.Node, now time.Time) []interface{} {
	info := n.Status.NodeInfo
	return []interface{}{
		n.Name,
		Status(n),
		Roles(n),
		registry.Age(n.CreationTimestamp, now),
		info.KubeletVersion,
		address(n, corev1.NodeInternalIP),
		address(n, corev1.NodeExternalIP),
		orUnknown(info.OSImage),
		orUnknown(info.KernelVersion),
		orUnknown(info.ContainerRuntimeVersion),
	}
}

// Status is the STATUS cell: Ready or NotReady from the Ready condition
// (any status but True is NotReady), Unknown without one, then
// SchedulingDisabled for a cordoned node.
func Status(n *corev1.Node) string {
	var parts []string
	for _, c := range n.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			parts = []string{string(corev1.NodeReady)}
		} else {
			parts = []string{"Not" + string(corev1.NodeReady)}
		}
	}
	if len(parts) == 0 {
		parts = []string{"Unknown"}
	}
	if n.Spec.Unschedulable {
		parts = append(parts, "SchedulingDisabled")
	}
	return strings.Join(parts, ",")
}

// Roles is the ROLES cell: the sorted, de-duplicated roles, or <none>.
func Roles(n *corev1.Node) string {
	var roles []string
	for k, v := range n.Labels {
		switch {
		case strings.HasPrefix(k, labelNodeRolePrefix):
			if r := strings.TrimPrefix(k, labelNodeRolePrefix); r != "" {
				roles = append(roles, r)
			}
		case k == labelNodeRole && v != "":
			roles = append(roles, v)
		}
	}
	if len(roles) == 0 {
		return "<none>"
	}
	slices.Sort(roles)
	return strings.Join(slices.Compact(roles), ",")
}

// address is the first address of type t, or <none>.
func address(n *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range n.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return "<none>"
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}
