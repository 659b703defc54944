// Package namespace describes core v1 Namespaces and their lifecycle as in
// Kubernetes: a namespace is created with the "kubernetes" finalizer in
// spec.finalizers; its first DELETE only marks it (deletionTimestamp set,
// status.phase Terminating) while the namespace controller deletes its
// content and then removes that finalizer through namespaces/<name>/finalize;
// an update that leaves a terminating namespace with no finalizers of
// either kind deletes it. The system namespaces are ensured by the
// namespaces controller at start; the NamespaceLifecycle admission plugin
// refuses their deletion and any create in a terminating namespace.
//
// Invariants: spec.finalizers changes only through the finalize
// subresource (a main-resource update keeps the stored ones, a status
// update keeps the whole spec), status only through status, and both only
// hold names that are qualified or standard (kubernetes, orphan,
// foregroundDeletion), as kube-apiserver validates them.
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
		FinalizeSubresource:      true,
		AllowUnconditionalUpdate: true,
		New:                      func() runtime.Object { return &corev1.Namespace{} },
		NewList:                  func() runtime.Object { return &corev1.NamespaceList{} },
		PrepareForCreate:         prepareForCreate,
		PrepareForUpdate:         prepareForUpdate,
		PrepareForDelete:         prepareForDelete,
		FinalizersDone:           func(obj runtime.Object) bool { return len(obj.(*corev1.Namespace).Spec.Finalizers) == 0 },
		ValidateCreate: func(obj runtime.Object) field.ErrorList {
			return validateFinalizers(obj.(*corev1.Namespace))
		},
		ValidateUpdate: func(obj, _ runtime.Object) field.ErrorList {
			return validateFinalizers(obj.(*corev1.Namespace))
		},
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

// prepareForCreate makes a new namespace Active with the kubernetes
// finalizer, which the namespace controller removes once the namespace's
// content is gone.
func prepareForCreate(obj runtime.Object) {
	ns := obj.(*corev1.Namespace)
	ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	if !hasFinalizer(ns, corev1.FinalizerKubernetes) {
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
	}
	setNameLabel(ns)
}

// prepareForUpdate keeps what the subresource may not change: status on a
// main update or finalize, the spec on a status update, and spec.finalizers
// on a main update (only finalize changes them).
func prepareForUpdate(obj, old runtime.Object, subresource string) {
	ns, oldNS := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	switch subresource {
	case "status":
		ns.Spec = oldNS.Spec
	case "finalize":
		ns.Status = oldNS.Status
	default:
		ns.Spec.Finalizers = oldNS.Spec.Finalizers
		ns.Status = oldNS.Status
	}
	setNameLabel(ns)
}

// prepareForDelete: the first DELETE marks the namespace Terminating and
// keeps it; a later one deletes it only once spec.finalizers is empty.
func prepareForDelete(obj runtime.Object) (bool, error) {
	ns := obj.(*corev1.Namespace)
	if ns.DeletionTimestamp == nil {
		ns.Status.Phase = corev1.NamespaceTerminating
		return true, nil
	}
	if len(ns.Spec.Finalizers) > 0 {
		return false, errContentRemaining(ns.Name)
	}
	return false, nil
}

func hasFinalizer(ns *corev1.Namespace, f corev1.FinalizerName) bool {
	for _, x := range ns.Spec.Finalizers {
		if x == f {
			return true
		}
	}
	return false
}

func setNameLabel(ns *corev1.Namespace) {
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}
