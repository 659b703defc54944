package openapi

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/served"
)

// OpenAPI holds the documents built for one registry.Set and the handler
// serving them. It is immutable after New and safe for concurrent use.
type OpenAPI struct {
	v2            *spec.Swagger
	v3            map[string]*spec3.OpenAPI
	handler       http.Handler
	typeConverter managedfields.TypeConverter
}

// New builds the v2 document, one v3 document per discovery path and group
// version, the handler serving them, and the server-side apply type
// converter, all from the generated definitions and the resources in set.
// version is the server's Kubernetes version (info.version, e.g. "v1.33.0").
// It fails if a served type has no generated definition.
func New(resources *registry.Set, version string) (*OpenAPI, error) {
	scheme, err := served.NewScheme()
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	// The reference form does not matter here: these definitions are only
	// looked up by name and read for the option types' properties.
	defs := GetOpenAPIDefinitions(func(string) spec.Ref { return spec.Ref{} })
	if err := checkModels(resources, defs); err != nil {
		return nil, err
	}
	namer := newDefinitionNamer(scheme, resources)
	info := &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes", Version: version}}

	opts, err := newOptionParams(defs)
	if err != nil {
		return nil, fmt.Errorf("openapi: query parameters: %w", err)
	}
	services := buildServices(resources, opts)

	v2, err := builder.BuildOpenAPISpecFromRoutes(containers(services, ""), &common.Config{
		Info:                           info,
		GetDefinitions:                 GetOpenAPIDefinitions,
		GetDefinitionName:              namer.name,
		GetOperationIDAndTagsFromRoute: operationIDAndTags,
		CommonResponses:                map[int]spec.Response{http.StatusUnauthorized: {ResponseProps: spec.ResponseProps{Description: "Unauthorized"}}},
	})
	if err != nil {
		return nil, fmt.Errorf("openapi: building v2 document: %w", err)
	}

	// The v3 definitions are computed once and shared by every v3 build:
	// the generated function is large and its result does not depend on
	// the document.
	v3defs := GetOpenAPIDefinitions(func(name string) spec.Ref {
		defName, _ := namer.name(name)
		return spec.MustCreateRef("#/components/schemas/" + common.EscapeJsonPointer(defName))
	})
	v3config := func() *common.OpenAPIV3Config {
		return &common.OpenAPIV3Config{
			Info:                           info,
			Definitions:                    v3defs,
			GetDefinitionName:              namer.name,
			GetOperationIDAndTagsFromRoute: operationIDAndTags,
			CommonResponses: map[int]*spec3.Response{http.StatusUnauthorized: {
				ResponseProps: spec3.ResponseProps{Description: "Unauthorized"},
			}},
		}
	}
	v3 := map[string]*spec3.OpenAPI{}
	for _, s := range services {
		if _, done := v3[s.doc]; done {
			continue
		}
		doc, err := builder3.BuildOpenAPISpecFromRoutes(containers(services, s.doc), v3config())
		if err != nil {
			return nil, fmt.Errorf("openapi: building v3 document %s: %w", s.doc, err)
		}
		v3[s.doc] = doc
	}

	tc, err := newTypeConverter(resources, v3config())
	if err != nil {
		return nil, err
	}
	h, err := newHandler(v2, v3)
	if err != nil {
		return nil, err
	}
	return &OpenAPI{v2: v2, v3: v3, handler: h, typeConverter: tc}, nil
}

// checkModels verifies that every served type has a generated definition of
// its own, so a missing package in generate.sh fails with the resource's
// name rather than deep inside the builder. The builders find a definition through the type's
// OpenAPIModelName method, which a type without one inherits from an
// embedded metav1.TypeMeta or ObjectMeta: the kind would then be published,
// and applied, as TypeMeta.
func checkModels(resources *registry.Set, defs map[string]common.OpenAPIDefinition) error {
	for _, r := range resources.All() {
		objs := []runtime.Object{r.New()}
		if r.NewList != nil { // review resources have no list
			objs = append(objs, r.NewList())
		}
		for _, obj := range objs {
			model := util.GetCanonicalTypeName(obj)
			_, generated := defs[model]
			if !generated || !strings.HasSuffix(model, "."+reflect.TypeOf(obj).Elem().Name()) {
				return fmt.Errorf("openapi: resource %s: type %T has no OpenAPI model of its own (it reports %q); add its package to generate.sh",
					r.GroupVersionResource(), obj, model)
			}
		}
	}
	return nil
}

// containers selects the services of one v3 document, or all of them when
// doc is empty (the v2 document describes every path).
func containers(services []*service, doc string) []common.RouteContainer {
	var out []common.RouteContainer
	for _, s := range services {
		if doc == "" || s.doc == doc {
			out = append(out, s)
		}
	}
	return out
}

// newTypeConverter builds the structured-merge-diff type converter the way
// kube-apiserver does: from the v3 form of the served kinds' definitions,
// whose x-kubernetes-group-version-kind extensions index them by kind.
func newTypeConverter(resources *registry.Set, config *common.OpenAPIV3Config) (managedfields.TypeConverter, error) {
	var names []string
	for _, r := range resources.All() {
		names = append(names, util.GetCanonicalTypeName(r.New()))
	}
	models, err := builder3.BuildOpenAPIDefinitionsForResources(config, names...)
	if err != nil {
		return nil, fmt.Errorf("openapi: definitions for the type converter: %w", err)
	}
	tc, err := managedfields.NewTypeConverter(models, false)
	if err != nil {
		return nil, fmt.Errorf("openapi: type converter: %w", err)
	}
	return tc, nil
}

// Handler serves GET /openapi/v2 (JSON, or protobuf when asked for
// application/com.github.proto-openapi.spec.v2@v1.0+protobuf), GET
// /openapi/v3 (the index) and GET /openapi/v3/<document>.
func (o *OpenAPI) Handler() http.Handler { return o.handler }

// Register mounts Handler on mux at the paths it serves.
func (o *OpenAPI) Register(mux *http.ServeMux) {
	mux.Handle("/openapi/v2", o.handler)
	mux.Handle("/openapi/v3", o.handler)
	mux.Handle("/openapi/v3/", o.handler)
}

// TypeConverter converts served objects to and from structured-merge-diff
// typed values, for managedfields.NewDefaultFieldManager.
func (o *OpenAPI) TypeConverter() managedfields.TypeConverter { return o.typeConverter }

// V2 returns the v2 document. Callers must not modify it.
func (o *OpenAPI) V2() *spec.Swagger { return o.v2 }

// V3 returns the v3 document with the given name ("api/v1",
// "apis/coordination.k8s.io/v1", ...). Callers must not modify it.
func (o *OpenAPI) V3(name string) (*spec3.OpenAPI, bool) {
	d, ok := o.v3[name]
	return d, ok
}
