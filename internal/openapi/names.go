package openapi

import (
	"reflect"
	"sort"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/leasehold/leasehold/internal/registry"
)

// extensionGVK is the vendor extension naming the kinds a definition or an
// operation describes.
const extensionGVK = "x-kubernetes-group-version-kind"

// definitionNamer keeps the generator's model names as definition names (the
// io.k8s.api... names kube-apiserver publishes) and attaches the
// x-kubernetes-group-version-kind extension to every definition that is the
// Go type of a known kind.
type definitionNamer struct {
	// gvks maps a model name to its extension value, in the exact shape
	// managedfields' GVK parser accepts: []interface{} of
	// map[string]interface{}.
	gvks map[string][]interface{}
}

// newDefinitionNamer indexes the kinds the scheme registers plus the kinds
// (and list kinds) of the served resources, so a served kind is tagged even
// when the scheme it came with does not register it.
func newDefinitionNamer(scheme *runtime.Scheme, resources *registry.Set) *definitionNamer {
	byModel := map[string]map[schema.GroupVersionKind]bool{}
	add := func(model string, gvk schema.GroupVersionKind) {
		if byModel[model] == nil {
			byModel[model] = map[schema.GroupVersionKind]bool{}
		}
		byModel[model][gvk] = true
	}
	for gvk, t := range scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal {
			continue
		}
		add(util.GetCanonicalTypeName(reflect.New(t).Interface()), gvk)
	}
	for _, r := range resources.All() {
		add(util.GetCanonicalTypeName(r.New()), r.GroupVersionKind())
		if r.NewList != nil {
			add(util.GetCanonicalTypeName(r.NewList()), r.GroupVersion.WithKind(r.ListKind))
		}
	}

	n := &definitionNamer{gvks: make(map[string][]interface{}, len(byModel))}
	for model, set := range byModel {
		list := make([]schema.GroupVersionKind, 0, len(set))
		for gvk := range set {
			list = append(list, gvk)
		}
		// Sorted so the documents, and therefore their ETags, are stable
		// across restarts.
		sort.Slice(list, func(i, j int) bool {
			a, b := list[i], list[j]
			if a.Group != b.Group {
				return a.Group < b.Group
			}
			if a.Version != b.Version {
				return a.Version < b.Version
			}
			return a.Kind < b.Kind
		})
		ext := make([]interface{}, 0, len(list))
		for _, gvk := range list {
			ext = append(ext, map[string]interface{}{
				"group":   gvk.Group,
				"version": gvk.Version,
				"kind":    gvk.Kind,
			})
		}
		n.gvks[model] = ext
	}
	return n
}

// name implements the builders' GetDefinitionName hook.
func (n *definitionNamer) name(model string) (string, spec.Extensions) {
	ext, ok := n.gvks[model]
	if !ok {
		return model, nil
	}
	return model, spec.Extensions{extensionGVK: ext}
}
