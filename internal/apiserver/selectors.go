package apiserver

import (
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/registry"
)

// predicate is a parsed label and field selector.
type predicate struct {
	label labels.Selector
	field fields.Selector
}

func (p predicate) empty() bool { return p.label.Empty() && p.field.Empty() }

// parsePredicate parses and checks the selectors of a list or watch request.
func parsePredicate(res *registry.Resource, labelSel, fieldSel string) (predicate, error) {
	p := predicate{label: labels.Everything(), field: fields.Everything()}
	var err error
	if labelSel != "" {
		if p.label, err = labels.Parse(labelSel); err != nil {
			return p, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
		}
	}
	if fieldSel != "" {
		if p.field, err = fields.ParseSelector(fieldSel); err != nil {
			return p, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
		}
		for _, req := range p.field.Requirements() {
			if err := checkField(res, req.Field); err != nil {
				return p, err
			}
		}
	}
	return p, nil
}

// checkField rejects selectors on fields the resource does not index, with
// the message apimachinery's default field label conversion uses.
func checkField(res *registry.Resource, field string) error {
	if field == "metadata.name" || field == "metadata.namespace" {
		return nil
	}
	if res.SelectableFields == nil {
		return apierrors.NewBadRequest(fmt.Sprintf("%q is not a known field selector: only %q, %q", field, "metadata.name", "metadata.namespace"))
	}
	known := res.SelectableFields(res.New())
	if _, ok := known[field]; ok {
		return nil
	}
	names := []string{"metadata.name", "metadata.namespace"}
	for k := range known {
		names = append(names, k)
	}
	sort.Strings(names[2:])
	return apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s (known: %s)", field, strings.Join(names, ", ")))
}

// matcher returns a function telling whether an object satisfies p.
func (p predicate) matcher(res *registry.Resource) func(runtime.Object) bool {
	if p.empty() {
		return nil
	}
	return func(obj runtime.Object) bool {
		acc, err := meta.Accessor(obj)
		if err != nil {
			return false
		}
		if !p.label.Matches(labels.Set(acc.GetLabels())) {
			return false
		}
		if p.field.Empty() {
			return true
		}
		set := fields.Set{"metadata.name": acc.GetName()}
		if res.Namespaced {
			set["metadata.namespace"] = acc.GetNamespace()
		}
		if res.SelectableFields != nil {
			for k, v := range res.SelectableFields(obj) {
				set[k] = v
			}
		}
		return p.field.Matches(set)
	}
}
