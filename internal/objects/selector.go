package objects

// selector.go is what a label and field selector select: parsed and
// checked once per list, watch or deletecollection, then tested against
// each object.

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

// Selector is a parsed label and field selector of one resource.
type Selector struct {
	res   *registry.Resource
	label labels.Selector
	field fields.Selector
}

// Empty tells whether s selects every object; the zero Selector does.
func (s Selector) Empty() bool {
	return (s.label == nil || s.label.Empty()) && (s.field == nil || s.field.Empty())
}

// ParseSelector parses and checks the selectors of a list, watch or
// deletecollection of res ("" selects everything).
func ParseSelector(res *registry.Resource, labelSel, fieldSel string) (Selector, error) {
	s := Selector{res: res, label: labels.Everything(), field: fields.Everything()}
	var err error
	if labelSel != "" {
		if s.label, err = labels.Parse(labelSel); err != nil {
			return s, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
		}
	}
	if fieldSel != "" {
		if s.field, err = fields.ParseSelector(fieldSel); err != nil {
			return s, apierrors.NewBadRequest(fmt.Sprintf("invalid field selector: %v", err))
		}
		for _, req := range s.field.Requirements() {
			if err := checkField(res, req.Field); err != nil {
				return s, err
			}
		}
	}
	return s, nil
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

// matcher returns a function telling whether an object satisfies s, or
// nil when every object does (the cache then skips the test).
func (s Selector) matcher() func(runtime.Object) bool {
	if s.Empty() {
		return nil
	}
	res := s.res
	return func(obj runtime.Object) bool {
		acc, err := meta.Accessor(obj)
		if err != nil {
			return false
		}
		if !s.label.Matches(labels.Set(acc.GetLabels())) {
			return false
		}
		if s.field.Empty() {
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
		return s.field.Matches(set)
	}
}
