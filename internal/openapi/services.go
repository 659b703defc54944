package openapi

import (
	"net/http"
	"strings"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/kube-openapi/pkg/common"

	"github.com/leasehold/leasehold/internal/registry"
)

// Content types published on operations, as kube-apiserver lists them.
const (
	mimeJSON        = "application/json"
	mimeYAML        = "application/yaml"
	mimeProtobuf    = "application/vnd.kubernetes.protobuf"
	mimeJSONWatch   = "application/json;stream=watch"
	mimeProtoWatch  = "application/vnd.kubernetes.protobuf;stream=watch"
	mimeAny         = "*/*"
	mimeJSONPatch   = "application/json-patch+json"
	mimeMergePatch  = "application/merge-patch+json"
	mimeStratPatch  = "application/strategic-merge-patch+json"
	mimeApplyPatch  = "application/apply-patch+yaml"
	extensionAction = "x-kubernetes-action"
)

// The content-type lists are built per call so no route shares a mutable
// slice with another.
func objectMIMEs() []string { return []string{mimeJSON, mimeYAML, mimeProtobuf} }
func listMIMEs() []string {
	return []string{mimeJSON, mimeYAML, mimeProtobuf, mimeJSONWatch, mimeProtoWatch}
}
func patchMIMEs() []string {
	return []string{mimeJSONPatch, mimeMergePatch, mimeStratPatch, mimeApplyPatch}
}

// Document names of the non-group-version /openapi/v3 documents.
const (
	docCoreVersions = "api"
	docGroups       = "apis"
	docVersion      = "version"
)

// buildServices describes every path Leasehold serves for the resources in
// set: the discovery documents, /version, and per resource the collection,
// item, watch and status paths with the verbs kube-apiserver publishes.
func buildServices(set *registry.Set, opts *optionParams) []*service {
	svcs := []*service{
		{doc: docCoreVersions, root: "/api", routes: []common.Route{
			discoveryRoute("/api/", "getCoreAPIVersions", "core", "get available API versions", &metav1.APIVersions{}),
		}},
		{doc: docGroups, root: "/apis", routes: []common.Route{
			discoveryRoute("/apis/", "getAPIVersions", "apis", "get available API versions", &metav1.APIGroupList{}),
		}},
		{doc: docVersion, root: "/version", routes: []common.Route{&route{
			method: http.MethodGet, path: "/version/", operationID: "getCodeVersion", tags: []string{"version"},
			description: "get the code version", consumes: []string{mimeJSON}, produces: []string{mimeJSON},
			responses: []common.StatusCodeResponse{response{http.StatusOK, "OK", &version.Info{}}},
		}}},
	}

	seenGroup := map[string]bool{}
	for _, gv := range set.GroupVersions() {
		if gv.Group != "" && !seenGroup[gv.Group] {
			seenGroup[gv.Group] = true
			name := groupName(gv.Group)
			svcs = append(svcs, &service{doc: "apis/" + gv.Group, root: "/apis/" + gv.Group, routes: []common.Route{
				discoveryRoute("/apis/"+gv.Group+"/", "get"+name+"APIGroup", lowerFirst(name),
					"get information of a group", &metav1.APIGroup{}),
			}})
		}

		doc := docName(gv)
		root := "/" + doc
		opPrefix := groupName(gv.Group) + operationIDPart(gv.Version)
		tag := lowerFirst(groupName(gv.Group)) + "_" + gv.Version
		s := &service{doc: doc, root: root, routes: []common.Route{
			discoveryRoute(root+"/", "get"+opPrefix+"APIResources", tag, "get available resources", &metav1.APIResourceList{}),
		}}
		for _, r := range set.All() {
			if r.GroupVersion == gv {
				s.routes = append(s.routes, resourceRoutes(r, root, opPrefix, tag, opts)...)
			}
		}
		svcs = append(svcs, s)
	}
	return svcs
}

func discoveryRoute(path, id, tag, description string, model interface{}) *route {
	return &route{
		method: http.MethodGet, path: path, operationID: id, tags: []string{tag}, description: description,
		consumes: objectMIMEs(), produces: objectMIMEs(),
		responses: []common.StatusCodeResponse{response{http.StatusOK, "OK", model}},
	}
}

// resourceRoutes lists the operations of one resource. Operation IDs follow
// kube-apiserver's scheme (verb, group, version, "Namespaced", kind, suffix)
// because generated clients and kubectl's tests key on them.
func resourceRoutes(r *registry.Resource, root, opPrefix, tag string, opts *optionParams) []common.Route {
	kind := r.Kind
	gvk := metav1.GroupVersionKind(r.GroupVersionKind())
	meta := func(action string) map[string]interface{} {
		return map[string]interface{}{extensionAction: action, extensionGVK: gvk}
	}
	tags := []string{tag}

	scope, scoped := "", ""
	var scopeParams []common.Parameter
	if r.Namespaced {
		scope, scoped = "/namespaces/{namespace}", "Namespaced"
		scopeParams = []common.Parameter{param{
			name: "namespace", description: "object name and auth scope, such as for teams and projects",
			kind: common.PathParameterKind, dataType: "string", required: true,
		}}
	}
	nameParam := param{
		name: "name", description: "name of the " + kind,
		kind: common.PathParameterKind, dataType: "string", required: true,
	}
	collection := root + scope + "/" + r.Resource
	item := collection + "/{name}"
	itemParams := append(append([]common.Parameter{}, scopeParams...), nameParam)

	obj := r.New()
	var list interface{}
	if r.NewList != nil {
		list = r.NewList()
	}
	status := &metav1.Status{}
	body := func(required bool) param {
		return param{name: "body", kind: common.BodyParameterKind, required: required}
	}
	params := func(base []common.Parameter, groups ...[]param) []common.Parameter {
		out := append([]common.Parameter{}, base...)
		for _, g := range groups {
			for _, p := range g {
				out = append(out, p)
			}
		}
		return out
	}
	ok := func(model interface{}) response { return response{http.StatusOK, "OK", model} }
	created := func(model interface{}) response { return response{http.StatusCreated, "Created", model} }
	accepted := func(model interface{}) response { return response{http.StatusAccepted, "Accepted", model} }
	responses := func(rs ...response) []common.StatusCodeResponse {
		out := make([]common.StatusCodeResponse, len(rs))
		for i, x := range rs {
			out[i] = x
		}
		return out
	}
	// deletecollection takes the list selectors but cannot watch.
	deleteCollectionParams := filterParams(opts.list, "watch", "allowWatchBookmarks")

	create := &route{
		method: http.MethodPost, path: collection, operationID: "create" + opPrefix + scoped + kind, tags: tags,
		description: "create " + article(kind) + " " + kind,
		params:      params(scopeParams, opts.create, []param{body(true)}), consumes: []string{mimeAny}, produces: objectMIMEs(),
		metadata: meta("post"), body: obj, responses: responses(ok(obj), created(obj), accepted(obj)),
	}
	if r.Review != nil {
		// A review is answered, not stored: create is its only operation,
		// as kube-apiserver publishes SelfSubjectAccessReview and the like.
		return []common.Route{create}
	}
	routes := []common.Route{
		&route{
			method: http.MethodGet, path: collection, operationID: "list" + opPrefix + scoped + kind, tags: tags,
			description: "list or watch objects of kind " + kind,
			params:      params(scopeParams, opts.list), consumes: []string{mimeAny}, produces: listMIMEs(),
			metadata: meta("list"), responses: responses(ok(list)),
		},
		create,
		&route{
			method: http.MethodDelete, path: collection, operationID: "delete" + opPrefix + "Collection" + scoped + kind, tags: tags,
			description: "delete collection of " + kind,
			params:      params(scopeParams, opts.delete, deleteCollectionParams, []param{body(false)}),
			consumes:    []string{mimeAny}, produces: objectMIMEs(),
			metadata: meta("deletecollection"), body: &metav1.DeleteOptions{}, responses: responses(ok(status)),
		},
		&route{
			method: http.MethodGet, path: item, operationID: "read" + opPrefix + scoped + kind, tags: tags,
			description: "read the specified " + kind,
			params:      itemParams, consumes: []string{mimeAny}, produces: objectMIMEs(),
			metadata: meta("get"), responses: responses(ok(obj)),
		},
		&route{
			method: http.MethodPut, path: item, operationID: "replace" + opPrefix + scoped + kind, tags: tags,
			description: "replace the specified " + kind,
			params:      params(itemParams, opts.update, []param{body(true)}), consumes: []string{mimeAny}, produces: objectMIMEs(),
			metadata: meta("put"), body: obj, responses: responses(ok(obj), created(obj)),
		},
		&route{
			method: http.MethodDelete, path: item, operationID: "delete" + opPrefix + scoped + kind, tags: tags,
			description: "delete " + article(kind) + " " + kind,
			params:      params(itemParams, opts.delete, []param{body(false)}), consumes: []string{mimeAny}, produces: objectMIMEs(),
			metadata: meta("delete"), body: &metav1.DeleteOptions{}, responses: responses(ok(status), accepted(status)),
		},
		&route{
			method: http.MethodPatch, path: item, operationID: "patch" + opPrefix + scoped + kind, tags: tags,
			description: "partially update the specified " + kind,
			params:      params(itemParams, opts.patch, []param{body(true)}), consumes: patchMIMEs(), produces: objectMIMEs(),
			metadata: meta("patch"), body: &metav1.Patch{}, responses: responses(ok(obj), created(obj)),
		},
		// The /watch/ paths are deprecated in favour of ?watch=true but
		// kube-apiserver still serves and publishes them.
		&route{
			method: http.MethodGet, path: root + "/watch" + scope + "/" + r.Resource,
			operationID: "watch" + opPrefix + scoped + kind + "List", tags: tags,
			description: "watch individual changes to a list of " + kind + ". deprecated: use the 'watch' parameter with a list operation instead.",
			params:      params(scopeParams, opts.list), consumes: []string{mimeAny}, produces: listMIMEs(),
			metadata: meta("watchlist"), responses: responses(ok(&metav1.WatchEvent{})),
		},
		&route{
			method: http.MethodGet, path: root + "/watch" + scope + "/" + r.Resource + "/{name}",
			operationID: "watch" + opPrefix + scoped + kind, tags: tags,
			description: "watch changes to an object of kind " + kind + ". deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter.",
			params:      params(itemParams, opts.list), consumes: []string{mimeAny}, produces: listMIMEs(),
			metadata: meta("watch"), responses: responses(ok(&metav1.WatchEvent{})),
		},
	}
	if r.Namespaced {
		routes = append(routes,
			&route{
				method: http.MethodGet, path: root + "/" + r.Resource, operationID: "list" + opPrefix + kind + "ForAllNamespaces", tags: tags,
				description: "list or watch objects of kind " + kind,
				params:      params(nil, opts.list), consumes: []string{mimeAny}, produces: listMIMEs(),
				metadata: meta("list"), responses: responses(ok(list)),
			},
			&route{
				method: http.MethodGet, path: root + "/watch/" + r.Resource, operationID: "watch" + opPrefix + kind + "ListForAllNamespaces", tags: tags,
				description: "watch individual changes to a list of " + kind + ". deprecated: use the 'watch' parameter with a list operation instead.",
				params:      params(nil, opts.list), consumes: []string{mimeAny}, produces: listMIMEs(),
				metadata: meta("watchlist"), responses: responses(ok(&metav1.WatchEvent{})),
			},
		)
	}
	if r.StatusSubresource {
		statusPath := item + "/status"
		routes = append(routes,
			&route{
				method: http.MethodGet, path: statusPath, operationID: "read" + opPrefix + scoped + kind + "Status", tags: tags,
				description: "read status of the specified " + kind,
				params:      itemParams, consumes: []string{mimeAny}, produces: objectMIMEs(),
				metadata: meta("get"), responses: responses(ok(obj)),
			},
			&route{
				method: http.MethodPut, path: statusPath, operationID: "replace" + opPrefix + scoped + kind + "Status", tags: tags,
				description: "replace status of the specified " + kind,
				params:      params(itemParams, opts.update, []param{body(true)}), consumes: []string{mimeAny}, produces: objectMIMEs(),
				metadata: meta("put"), body: obj, responses: responses(ok(obj), created(obj)),
			},
			&route{
				method: http.MethodPatch, path: statusPath, operationID: "patch" + opPrefix + scoped + kind + "Status", tags: tags,
				description: "partially update status of the specified " + kind,
				params:      params(itemParams, opts.patch, []param{body(true)}), consumes: patchMIMEs(), produces: objectMIMEs(),
				metadata: meta("patch"), body: &metav1.Patch{}, responses: responses(ok(obj), created(obj)),
			},
		)
	}
	return routes
}

// groupName is the operation-ID form of an API group: "Core" for the legacy
// group, otherwise the group without ".k8s.io" in camel case
// ("coordination.k8s.io" -> "Coordination", "rbac.authorization.k8s.io" ->
// "RbacAuthorization"), as kube-apiserver names its operations.
func groupName(group string) string {
	if group == "" {
		return "Core"
	}
	return operationIDPart(strings.TrimSuffix(group, ".k8s.io"))
}

// operationIDPart drops separators and capitalises the letter after each one
// and the first letter.
func operationIDPart(s string) string {
	var b strings.Builder
	upper := true
	for _, c := range s {
		if !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			upper = true
			continue
		}
		if upper {
			c = unicode.ToUpper(c)
			upper = false
		}
		b.WriteRune(c)
	}
	return b.String()
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// article is the indefinite article kube-apiserver's descriptions use.
func article(kind string) string {
	if kind != "" && strings.ContainsRune("AEIOU", rune(kind[0])) {
		return "an"
	}
	return "a"
}

// docName is the /openapi/v3 document of a group version.
func docName(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.String()
}
