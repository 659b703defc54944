// Package namespace describes core v1 Namespaces. Leasehold keeps namespaces
// simple: they exist or not (no finalization phase), and the system namespaces
// are ensured by the namespaces controller at start.
package namespace

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/leasehold/leasehold/internal/registry"
)

// System are the namespaces that always exist.
var System = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// Resource returns the descriptor of core v1 namespaces.
func Resource(now func() time.Time) *registry.Resource {
	return &registry.Resource{
		GroupVersion:             corev1.SchemeGroupVersion,
		Resource:                 "namespaces",
		SingularName:             "namespace",
		Kind:                     "Namespace",
		ListKind:                 "NamespaceList",
		ShortNames:               []string{"ns"},
		StatusSubresource:        true,
		AllowUnconditionalUpdate: true,
		New:                      func() runtime.Object { return &corev1.Namespace{} },
		NewList:                  func() runtime.Object { return &corev1.NamespaceList{} },
		PrepareForCreate: func(obj runtime.Object) {
			ns := obj.(*corev1.Namespace)
			ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
			if ns.Labels == nil {
				ns.Labels = map[string]string{}
			}
			ns.Labels[corev1.LabelMetadataName] = ns.Name
		},
		PrepareForUpdate: func(obj, old runtime.Object, subresource string) {
			ns, oldNS := obj.(*corev1.Namespace), old.(*corev1.Namespace)
			if subresource == "status" {
				ns.Spec = oldNS.Spec
			} else {
				ns.Status = oldNS.Status
			}
			if ns.Labels == nil {
				ns.Labels = map[string]string{}
			}
			ns.Labels[corev1.LabelMetadataName] = ns.Name
		},
		ValidateCreate: func(runtime.Object) field.ErrorList { return nil },
		ValidateUpdate: func(runtime.Object, runtime.Object) field.ErrorList { return nil },
		SelectableFields: func(obj runtime.Object) fields.Set {
			return fields.Set{"status.phase": string(obj.(*corev1.Namespace).Status.Phase)}
		},
		TableColumns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			{Name: "Status", Type: "string", Description: "The status of the namespace"},
			registry.AgeColumn,
		},
		TableRow: func(obj runtime.Object) []interface{} {
			ns := obj.(*corev1.Namespace)
			return []interface{}{ns.Name, string(ns.Status.Phase), registry.Age(ns.CreationTimestamp, now())}
		},
	}
}
