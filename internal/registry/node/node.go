// Package node describes core v1 Nodes: cluster-scoped, with a status
// subresource whose writes cannot touch the spec (and main-resource writes
// cannot touch the status), no create-on-update, the spec.unschedulable field
// selector, and the columns `kubectl get nodes` prints.
//
// Invariants: the descriptor's functions are pure and only ever see
// *corev1.Node values; the status a kubelet posts on create is kept, as
// kube-apiserver's node strategy keeps it.
package node

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/leasehold/leasehold/internal/registry"
)

// Resource returns the descriptor of core v1 nodes; now is the clock of the
// AGE column.
func Resource(now func() time.Time) *registry.Resource {
	return &registry.Resource{
		GroupVersion:             corev1.SchemeGroupVersion,
		Resource:                 "nodes",
		SingularName:             "node",
		Kind:                     "Node",
		ListKind:                 "NodeList",
		ShortNames:               []string{"no"},
		StatusSubresource:        true,
		AllowUnconditionalUpdate: true,
		New:                      func() runtime.Object { return &corev1.Node{} },
		NewList:                  func() runtime.Object { return &corev1.NodeList{} },
		PrepareForUpdate:         prepareForUpdate,
		ValidateCreate: func(obj runtime.Object) field.ErrorList {
			return ValidateSpec(&obj.(*corev1.Node).Spec, field.NewPath("spec"))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return ValidateSpecUpdate(&obj.(*corev1.Node).Spec, &old.(*corev1.Node).Spec, field.NewPath("spec"))
		},
		SelectableFields: func(obj runtime.Object) fields.Set {
			return fields.Set{"spec.unschedulable": strconv.FormatBool(obj.(*corev1.Node).Spec.Unschedulable)}
		},
		TableColumns: columns,
		TableRow:     func(obj runtime.Object) []interface{} { return row(obj.(*corev1.Node), now()) },
	}
}

// prepareForUpdate splits ownership of a Node between its two endpoints: a
// write to the main resource keeps the stored status (kubelets own it), and
// a write to /status keeps the stored spec (users and controllers own it).
func prepareForUpdate(obj, old runtime.Object, subresource string) {
	n, o := obj.(*corev1.Node), old.(*corev1.Node)
	if subresource == "status" {
		n.Spec = o.Spec
		return
	}
	n.Status = o.Status
}
