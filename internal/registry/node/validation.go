package node

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// validTaintEffects are the effects kube-apiserver accepts on node taints,
// in the order its NotSupported message lists them.
var validTaintEffects = []string{
	string(corev1.TaintEffectNoSchedule),
	string(corev1.TaintEffectPreferNoSchedule),
	string(corev1.TaintEffectNoExecute),
}

// ValidateSpec checks the parts of a NodeSpec that kube-apiserver validates
// and that matter to Leasehold's users: taints (qualified-name keys,
// label-value values, a known effect, unique per key and effect) and
// podCIDRs (valid CIDRs, at most one per IP family). Status is not validated, as upstream.
func ValidateSpec(spec *corev1.NodeSpec, fldPath *field.Path) field.ErrorList {
	errs := validateTaints(spec.Taints, fldPath.Child("taints"))
	cidrs := fldPath.Child("podCIDRs")
	for i, cidr := range spec.PodCIDRs {
		// Non-strict legacy parsing, as kube-apiserver applies to podCIDRs.
		errs = append(errs, validation.IsValidCIDRForLegacyField(cidrs.Index(i), cidr, false, nil)...)
	}
	if len(spec.PodCIDRs) > 1 {
		dual, err := netutils.IsDualStackCIDRStrings(spec.PodCIDRs)
		if err == nil && (!dual || len(spec.PodCIDRs) > 2) {
			errs = append(errs, field.Invalid(cidrs, spec.PodCIDRs, "may specify no more than one CIDR for each IP family"))
		}
	}
	return errs
}

// ValidateSpecUpdate checks an update: the spec rules, plus the two fields
// that may only go from unset to set (podCIDRs and providerID), with
// kube-apiserver's messages.
func ValidateSpecUpdate(spec, old *corev1.NodeSpec, fldPath *field.Path) field.ErrorList {
	errs := ValidateSpec(spec, fldPath)
	if len(old.PodCIDRs) > 0 && !sets.New(old.PodCIDRs...).Equal(sets.New(spec.PodCIDRs...)) {
		errs = append(errs, field.Forbidden(fldPath.Child("podCIDRs"), "node updates may not change podCIDR except from \"\" to valid"))
	}
	if old.ProviderID != "" && spec.ProviderID != old.ProviderID {
		errs = append(errs, field.Forbidden(fldPath.Child("providerID"), "node updates may not change providerID except from \"\" to valid"))
	}
	return errs
}

func validateTaints(taints []corev1.Taint, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[corev1.TaintEffect]sets.Set[string]{}
	for i, t := range taints {
		p := fldPath.Index(i)
		errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
		if msgs := validation.IsValidLabelValue(t.Value); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, strings.Join(msgs, ";")))
		}
		switch {
		case t.Effect == "":
			errs = append(errs, field.Required(p.Child("effect"), ""))
		case !sets.New(validTaintEffects...).Has(string(t.Effect)):
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, validTaintEffects))
		}
		if seen[t.Effect].Has(t.Key) {
			dup := field.Duplicate(p, t)
			dup.Detail = "taints must be unique by key and effect pair"
			errs = append(errs, dup)
			continue
		}
		if seen[t.Effect] == nil {
			seen[t.Effect] = sets.New[string]()
		}
		seen[t.Effect].Insert(t.Key)
	}
	return errs
}
