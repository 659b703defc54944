// Package leasecandidate describes coordination.k8s.io/v1beta1
// LeaseCandidates, the registrations of coordinated leader election
// (KEP-4355): validation with kube-apiserver's messages, ConfigMap-key names
// (candidates are named after identities such as host_uuid), the
// metadata.name field selector client-go's candidate informer uses, and the
// columns NAME/LEASENAME/BINARYVERSION/EMULATIONVERSION/AGE.
//
// v1alpha2 is not served: the OpenAPI models are generated for v1beta1 only,
// and a second version of the same storage would need conversion.
//
// Invariants: the descriptor's functions are pure and only ever see
// *coordinationv1beta1.LeaseCandidate values.
package leasecandidate

import (
	"time"

	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/leasehold/leasehold/internal/registry"
)

// Resource returns the descriptor of coordination.k8s.io/v1beta1
// leasecandidates; now is the clock of the AGE column.
func Resource(now func() time.Time) *registry.Resource {
	return &registry.Resource{
		GroupVersion: coordinationv1beta1.SchemeGroupVersion,
		Resource:     "leasecandidates",
		SingularName: "leasecandidate",
		Kind:         "LeaseCandidate",
		ListKind:     "LeaseCandidateList",
		Namespaced:   true,
		// As kube-apiserver's LeaseCandidate strategy (copied from Lease's).
		AllowCreateOnUpdate: true,
		ValidateName:        ValidateName,
		New:                 func() runtime.Object { return &coordinationv1beta1.LeaseCandidate{} },
		NewList:             func() runtime.Object { return &coordinationv1beta1.LeaseCandidateList{} },
		ValidateCreate: func(obj runtime.Object) field.ErrorList {
			return ValidateSpec(&obj.(*coordinationv1beta1.LeaseCandidate).Spec, field.NewPath("spec"))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return ValidateSpecUpdate(&obj.(*coordinationv1beta1.LeaseCandidate).Spec, &old.(*coordinationv1beta1.LeaseCandidate).Spec)
		},
		TableColumns: columns,
		TableRow: func(obj runtime.Object) []interface{} {
			c := obj.(*coordinationv1beta1.LeaseCandidate)
			return []interface{}{c.Name, c.Spec.LeaseName, c.Spec.BinaryVersion, c.Spec.EmulationVersion, registry.Age(c.CreationTimestamp, now())}
		},
	}
}

// columns are kube-apiserver's LeaseCandidate printer columns. Upstream looks
// the two version descriptions up in ObjectMeta's docs, which have no such
// keys, so they are empty there and here.
var columns = []metav1.TableColumnDefinition{
	registry.NameColumn,
	{Name: "LeaseName", Type: "string", Description: coordinationv1beta1.LeaseCandidateSpec{}.SwaggerDoc()["leaseName"]},
	{Name: "BinaryVersion", Type: "string"},
	{Name: "EmulationVersion", Type: "string"},
	registry.AgeColumn,
}

// ValidateName accepts what kube-apiserver accepts for a LeaseCandidate
// name: a ConfigMap key (letters, digits, '-', '_', '.'); prefix is ignored
// because a generateName prefix is itself a valid key.
func ValidateName(name string, _ bool) []string {
	return validation.IsConfigMapKey(name)
}
