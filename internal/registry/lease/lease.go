// Package lease describes coordination.k8s.io/v1 Leases: validation with
// Kubernetes' handwritten messages, the kubectl columns (NAME/HOLDER/AGE, and RENEW TIME/EXPIRES IN with -o wide), and
// the create-on-update behaviour kubelets rely on.
package lease

import (
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/leasehold/leasehold/internal/registry"
)

// Resource returns the descriptor of coordination.k8s.io/v1 leases.
func Resource(now func() time.Time) *registry.Resource {
	return &registry.Resource{
		GroupVersion:        coordinationv1.SchemeGroupVersion,
		Resource:            "leases",
		SingularName:        "lease",
		Kind:                "Lease",
		ListKind:            "LeaseList",
		Namespaced:          true,
		AllowCreateOnUpdate: true,
		New:                 func() runtime.Object { return &coordinationv1.Lease{} },
		NewList:             func() runtime.Object { return &coordinationv1.LeaseList{} },
		ValidateCreate: func(obj runtime.Object) field.ErrorList {
			return ValidateSpec(&obj.(*coordinationv1.Lease).Spec, field.NewPath("spec"))
		},
		ValidateUpdate: func(obj, _ runtime.Object) field.ErrorList {
			return ValidateSpec(&obj.(*coordinationv1.Lease).Spec, field.NewPath("spec"))
		},
		ChangedFields: changedFields,
		Renewal:       &registry.Renewal{Only: renewedOnly, Set: setRenewTime, WirePath: renewTimeWirePath, FromWire: renewalFromWire},
		// Renewals are most of all writes, and every field of a Lease is
		// omitempty (see registry.Resource.HandOffUpdates).
		HandOffUpdates: true,
		TableColumns:   columns,
		TableRow:       tableRow(now),
	}
}

// ValidateSpec checks a LeaseSpec as kube-apiserver's validateLeaseSpec does,
// including its quirk of reporting a bad strategy at spec.strategy.strategy.
func ValidateSpec(spec *coordinationv1.LeaseSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.LeaseDurationSeconds != nil && *spec.LeaseDurationSeconds <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("leaseDurationSeconds"), *spec.LeaseDurationSeconds, "must be greater than 0"))
	}
	if spec.LeaseTransitions != nil && *spec.LeaseTransitions < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("leaseTransitions"), *spec.LeaseTransitions, "must be greater than or equal to 0"))
	}
	if spec.Strategy != nil {
		errs = append(errs, ValidateStrategy(*spec.Strategy, fldPath.Child("strategy"))...)
	}
	if spec.PreferredHolder != nil && *spec.PreferredHolder != "" && (spec.Strategy == nil || *spec.Strategy == "") {
		errs = append(errs, field.Forbidden(fldPath.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return errs
}

// ValidateStrategy checks a CoordinatedLeaseStrategy; fldPath is the path of
// the strategy field itself (the "strategy" child is appended, as upstream does).
func ValidateStrategy(strategy coordinationv1.CoordinatedLeaseStrategy, fldPath *field.Path) field.ErrorList {
	p := fldPath.Child("strategy")
	s := string(strategy)
	if strings.Contains(s, "/") {
		var errs field.ErrorList
		for _, msg := range validation.IsQualifiedName(s) {
			errs = append(errs, field.Invalid(p, s, msg))
		}
		return errs
	}
	if strategy != coordinationv1.OldestEmulationVersion {
		return field.ErrorList{field.NotSupported(p, strategy, []string{string(coordinationv1.OldestEmulationVersion)})}
	}
	return nil
}
