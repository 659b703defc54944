package authorization

import (
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/leasehold/leasehold/internal/request"
)

// attributes is what a review asks the authorizer, plus the selector parse
// problems that upstream reports in status.evaluationError.
type attributes struct {
	request.Attributes
	selectorErrs []string
}

// resourceAttributes builds the attributes of a resource request, as
// kube-apiserver's ResourceAttributesFrom: an empty version matches every
// version ("*"); selectors that do not parse are dropped (a broader, never a
// narrower, question) and reported.
func resourceAttributes(u request.User, in *authorizationv1.ResourceAttributes) attributes {
	a := attributes{Attributes: request.Attributes{
		User:            u,
		ResourceRequest: true,
		Verb:            in.Verb,
		Namespace:       in.Namespace,
		APIGroup:        in.Group,
		APIVersion:      in.Version,
		Resource:        in.Resource,
		Subresource:     in.Subresource,
		Name:            in.Name,
	}}
	if a.APIVersion == "" {
		a.APIVersion = "*"
	}
	if in.FieldSelector != nil {
		sel, kept, err := fieldSelector(in.FieldSelector)
		a.FieldSelector = sel
		a.noteSelectorErr("fieldSelector", kept, err)
	}
	if in.LabelSelector != nil {
		sel, kept, err := labelSelector(in.LabelSelector)
		a.LabelSelector = sel
		a.noteSelectorErr("labelSelector", kept, err)
	}
	return a
}

func (a *attributes) noteSelectorErr(name string, kept bool, err error) {
	switch {
	case err == nil:
	case kept:
		a.selectorErrs = append(a.selectorErrs, "spec.resourceAttributes."+name+" partially ignored due to parse error")
	default:
		a.selectorErrs = append(a.selectorErrs, "spec.resourceAttributes."+name+" ignored due to parse error")
	}
}

// nonResourceAttributes builds the attributes of a non-resource request.
func nonResourceAttributes(u request.User, in *authorizationv1.NonResourceAttributes) attributes {
	return attributes{Attributes: request.Attributes{User: u, Path: in.Path, Verb: in.Verb}}
}

// specAttributes builds the attributes a (Local)SubjectAccessReview asks
// about, for the subject its spec names.
func specAttributes(spec *authorizationv1.SubjectAccessReviewSpec) attributes {
	u := request.User{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	if spec.Extra != nil {
		u.Extra = make(map[string][]string, len(spec.Extra))
		for k, v := range spec.Extra {
			u.Extra[k] = []string(v)
		}
	}
	if spec.ResourceAttributes != nil {
		return resourceAttributes(u, spec.ResourceAttributes)
	}
	return nonResourceAttributes(u, spec.NonResourceAttributes)
}

// fieldSelector returns the selector in its raw form. kept reports whether
// any requirement survived a parse error.
func fieldSelector(in *authorizationv1.FieldSelectorAttributes) (sel string, kept bool, err error) {
	if len(in.Requirements) == 0 {
		if in.RawSelector == "" {
			return "", false, nil
		}
		parsed, err := fields.ParseSelector(in.RawSelector)
		if err != nil {
			return "", false, err
		}
		return parsed.String(), false, nil
	}
	var parts []string
	var errs []string
	for _, r := range in.Requirements {
		op := ""
		switch r.Operator {
		case metav1.FieldSelectorOpIn:
			op = "="
		case metav1.FieldSelectorOpNotIn:
			op = "!="
		default:
			errs = append(errs, fmt.Sprintf("%q is not a supported field selector operator", r.Operator))
			continue
		}
		if len(r.Values) != 1 {
			errs = append(errs, "fieldSelectors must have exactly one value")
			continue
		}
		parts = append(parts, r.Key+op+fields.EscapeValue(r.Values[0]))
	}
	return strings.Join(parts, ","), len(parts) > 0, joinErrs(errs)
}

// labelSelector returns the selector in its raw form, as fieldSelector.
func labelSelector(in *authorizationv1.LabelSelectorAttributes) (sel string, kept bool, err error) {
	if len(in.Requirements) == 0 {
		if in.RawSelector == "" {
			return "", false, nil
		}
		parsed, err := labels.Parse(in.RawSelector)
		if err != nil {
			return "", false, err
		}
		return parsed.String(), false, nil
	}
	ops := map[metav1.LabelSelectorOperator]selection.Operator{
		metav1.LabelSelectorOpIn: selection.In, metav1.LabelSelectorOpNotIn: selection.NotIn,
		metav1.LabelSelectorOpExists: selection.Exists, metav1.LabelSelectorOpDoesNotExist: selection.DoesNotExist,
	}
	var parts []string
	var errs []string
	for _, r := range in.Requirements {
		op, ok := ops[r.Operator]
		if !ok {
			errs = append(errs, fmt.Sprintf("%q is not a valid label selector operator", r.Operator))
			continue
		}
		values := r.Values
		if len(values) == 0 {
			values = nil
		}
		req, err := labels.NewRequirement(r.Key, op, values)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		parts = append(parts, req.String())
	}
	return strings.Join(parts, ","), len(parts) > 0, joinErrs(errs)
}

func joinErrs(errs []string) error {
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(errs, "; "))
}

// evaluationError joins the authorizer's error with the selector problems,
// as kube-apiserver's BuildEvaluationError.
func evaluationError(err error, a attributes) string {
	var parts []string
	if err != nil {
		parts = append(parts, err.Error())
	}
	return strings.Join(append(parts, a.selectorErrs...), "; ")
}
