package authorization

import (
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The checks and messages below are kube-apiserver's
// (pkg/apis/authorization/validation), applied to the v1 types.

// ValidateSubjectAccessReviewSpec checks a (Local)SubjectAccessReview's spec:
// exactly one kind of attributes, and a user or a group to ask about.
func ValidateSubjectAccessReviewSpec(spec *authorizationv1.SubjectAccessReviewSpec, fldPath *field.Path) field.ErrorList {
	errs := validateAttributesChoice(spec.ResourceAttributes, spec.NonResourceAttributes, fldPath)
	if spec.User == "" && len(spec.Groups) == 0 {
		errs = append(errs, field.Invalid(fldPath.Child("user"), spec.User, `at least one of user or group must be specified`))
	}
	return append(errs, validateResourceAttributes(spec.ResourceAttributes, field.NewPath("spec", "resourceAttributes"))...)
}

// ValidateSelfSubjectAccessReviewSpec checks a SelfSubjectAccessReview's spec.
func ValidateSelfSubjectAccessReviewSpec(spec *authorizationv1.SelfSubjectAccessReviewSpec, fldPath *field.Path) field.ErrorList {
	errs := validateAttributesChoice(spec.ResourceAttributes, spec.NonResourceAttributes, fldPath)
	return append(errs, validateResourceAttributes(spec.ResourceAttributes, field.NewPath("spec", "resourceAttributes"))...)
}

func validateAttributesChoice(res *authorizationv1.ResourceAttributes, nonRes *authorizationv1.NonResourceAttributes, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if res != nil && nonRes != nil {
		errs = append(errs, field.Invalid(fldPath.Child("nonResourceAttributes"), nonRes, `cannot be specified in combination with resourceAttributes`))
	}
	if res == nil && nonRes == nil {
		errs = append(errs, field.Invalid(fldPath.Child("resourceAttributes"), nonRes, `exactly one of nonResourceAttributes or resourceAttributes must be specified`))
	}
	return errs
}

// validateEmptyMeta requires metadata to be empty (managedFields aside):
// reviews have no identity. exceptNamespace allows a LocalSubjectAccessReview's.
// The error shows the metadata as sent.
func validateEmptyMeta(m metav1.ObjectMeta, exceptNamespace bool) field.ErrorList {
	rest := m
	rest.ManagedFields = nil
	msg := `must be empty`
	if exceptNamespace {
		rest.Namespace = ""
		msg = `must be empty except for namespace`
	}
	if !equality.Semantic.DeepEqual(metav1.ObjectMeta{}, rest) {
		return field.ErrorList{field.Invalid(field.NewPath("metadata"), m, msg)}
	}
	return nil
}

// ValidateLocalSubjectAccessReview adds a LocalSubjectAccessReview's rules:
// resource attributes in its own namespace only, no non-resource attributes.
func ValidateLocalSubjectAccessReview(sar *authorizationv1.LocalSubjectAccessReview) field.ErrorList {
	errs := ValidateSubjectAccessReviewSpec(&sar.Spec, field.NewPath("spec"))
	errs = append(errs, validateEmptyMeta(sar.ObjectMeta, true)...)
	if ra := sar.Spec.ResourceAttributes; ra != nil && ra.Namespace != sar.Namespace {
		errs = append(errs, field.Invalid(field.NewPath("spec.resourceAttributes.namespace"), ra.Namespace, `must match metadata.namespace`))
	}
	if sar.Spec.NonResourceAttributes != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec.nonResourceAttributes"), sar.Spec.NonResourceAttributes, `disallowed on this kind of request`))
	}
	return errs
}

func validateResourceAttributes(ra *authorizationv1.ResourceAttributes, fldPath *field.Path) field.ErrorList {
	if ra == nil {
		return nil
	}
	var errs field.ErrorList
	if fs := ra.FieldSelector; fs != nil {
		p := fldPath.Child("fieldSelector")
		errs = append(errs, validateSelectorShape(fs.RawSelector, len(fs.Requirements), p)...)
		opts := metav1validation.FieldSelectorValidationOptions{AllowUnknownOperatorInRequirement: true}
		for i, r := range fs.Requirements {
			errs = append(errs, metav1validation.ValidateFieldSelectorRequirement(r, opts, p.Child("requirements").Index(i))...)
		}
	}
	if ls := ra.LabelSelector; ls != nil {
		p := fldPath.Child("labelSelector")
		errs = append(errs, validateSelectorShape(ls.RawSelector, len(ls.Requirements), p)...)
		opts := metav1validation.LabelSelectorValidationOptions{AllowUnknownOperatorInRequirement: true}
		for i, r := range ls.Requirements {
			errs = append(errs, metav1validation.ValidateLabelSelectorRequirement(r, opts, p.Child("requirements").Index(i))...)
		}
	}
	return errs
}

// validateSelectorShape: a selector is given either raw or as requirements.
func validateSelectorShape(raw string, requirements int, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if raw != "" && requirements > 0 {
		errs = append(errs, field.Invalid(fldPath.Child("rawSelector"), raw, "may not specified at the same time as requirements"))
	}
	if raw == "" && requirements == 0 {
		errs = append(errs, field.Required(fldPath.Child("requirements"), fmt.Sprintf("when %s is specified, requirements or rawSelector is required", fldPath)))
	}
	return errs
}
