package namespace

import (
	"errors"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// errContentRemaining is kube-apiserver's answer to a DELETE of a
// terminating namespace whose finalizers remain (409, its exact message).
func errContentRemaining(name string) error {
	//lint:ignore ST1005 the wire-visible Kubernetes message is capitalised and ends with a period
	return apierrors.NewConflict(corev1.Resource("namespaces"), name, errors.New("The system is ensuring all content is removed from this namespace.  Upon completion, this namespace will automatically be purged by the system."))
}

// standardFinalizers are the finalizer names that need no domain prefix.
var standardFinalizers = map[string]bool{
	string(corev1.FinalizerKubernetes): true,
	metav1.FinalizerOrphanDependents:   true,
	metav1.FinalizerDeleteDependents:   true,
}

// validateFinalizers checks spec.finalizers as kube-apiserver's
// ValidateFinalizerName does: qualified names, and names without a "/"
// only if standard.
func validateFinalizers(ns *corev1.Namespace) field.ErrorList {
	var errs field.ErrorList
	fld := field.NewPath("spec", "finalizers")
	for i, f := range ns.Spec.Finalizers {
		name := string(f)
		for _, msg := range validation.IsQualifiedName(name) {
			errs = append(errs, field.Invalid(fld.Index(i), name, msg))
		}
		if !strings.Contains(name, "/") && !standardFinalizers[name] {
			errs = append(errs, field.Invalid(fld.Index(i), name, "name is neither a standard finalizer name nor is it fully qualified"))
		}
	}
	return errs
}
