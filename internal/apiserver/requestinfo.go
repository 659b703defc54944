package apiserver

import (
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/leasehold/leasehold/internal/request"
)

// readRequestInfo is the pipeline's first stage: what the URL and method
// ask for, as the record's Attributes (what authorization, admission and
// audit judge), and as the requestInfo the verbs address storage with.
// ok=false for a non-resource request (discovery, health, metrics, ...).
func readRequestInfo(r *http.Request, a *request.Attributes) (info requestInfo, ok bool) {
	a.Path = r.URL.Path
	info, ok = parseRequestInfo(r)
	if !ok || info.resource == "" {
		// Kubernetes' verb for a non-resource request is the method.
		a.Verb = strings.ToLower(r.Method)
		return info, false
	}
	a.ResourceRequest = true
	a.Verb = info.verb
	a.APIGroup, a.APIVersion = info.group, info.version
	a.Resource, a.Subresource, a.Name = info.resource, info.subresource, info.name
	a.Namespace = info.namespace
	if info.resource == "namespaces" && info.namespace == "" && info.name != "" {
		// A namespace object lies in itself, as kube-apiserver's request
		// info says: a RoleBinding in namespace x may grant reading x.
		a.Namespace = info.name
	}
	if r.URL.RawQuery != "" && (info.verb == "list" || info.verb == "watch" || info.verb == "deletecollection") {
		q := r.URL.Query()
		a.FieldSelector, a.LabelSelector = q.Get("fieldSelector"), q.Get("labelSelector")
		if a.Name == "" && a.FieldSelector != "" && info.verb != "deletecollection" {
			// A list or watch of one object by name is authorized as that
			// object, as in kube-apiserver (a node watching its own Node).
			if sel, err := fields.ParseSelector(a.FieldSelector); err == nil {
				if name, ok := sel.RequiresExactMatch("metadata.name"); ok && len(content.IsPathSegmentName(name)) == 0 {
					a.Name = name
				}
			}
		}
	}
	return info, true
}

// requestInfo is what the URL and method say about a resource request, parsed
// the way kube-apiserver parses them (/api/v1/..., /apis/<group>/<version>/...).
type requestInfo struct {
	group, version string
	namespace      string
	resource       string
	name           string
	subresource    string
	// verb is the Kubernetes verb: get, list, watch, create, update, patch,
	// delete, deletecollection.
	verb string
}

// parseRequestInfo returns ok=false for paths that are not resource requests.
func parseRequestInfo(r *http.Request) (requestInfo, bool) {
	var info requestInfo
	var buf [maxPathParts]string
	parts, ok := splitPath(r.URL.Path, &buf)
	switch {
	case !ok:
		return info, false
	case len(parts) >= 2 && parts[0] == "api":
		info.version = parts[1]
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		info.group, info.version = parts[1], parts[2]
		parts = parts[3:]
	default:
		return info, false
	}
	watchPath := false
	if len(parts) > 0 && parts[0] == "watch" {
		// The deprecated /watch/ prefix kube-apiserver still serves.
		watchPath = true
		parts = parts[1:]
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) != 2 {
		// namespaces/<ns>/<resource>/... ; but namespaces/<name>/status or
		// namespaces/<name> alone address the namespace object itself.
		if len(parts) == 3 && (parts[2] == "status" || parts[2] == "finalize") {
			info.resource, info.name, info.subresource = "namespaces", parts[1], parts[2]
			parts = nil
		} else {
			info.namespace = parts[1]
			parts = parts[2:]
		}
	}
	if parts != nil {
		if len(parts) == 0 {
			return info, false
		}
		info.resource = parts[0]
		if len(parts) > 1 {
			info.name = parts[1]
		}
		if len(parts) > 2 {
			info.subresource = parts[2]
		}
		if len(parts) > 3 {
			return info, false
		}
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case info.name != "":
			info.verb = "get"
		case watchPath || (r.URL.RawQuery != "" && queryBool(r.URL.Query(), "watch")):
			info.verb = "watch"
		default:
			info.verb = "list"
		}
		if watchPath && info.name != "" {
			info.verb = "watch"
		}
	case http.MethodPost:
		info.verb = "create"
	case http.MethodPut:
		info.verb = "update"
	case http.MethodPatch:
		info.verb = "patch"
	case http.MethodDelete:
		if info.name == "" {
			info.verb = "deletecollection"
		} else {
			info.verb = "delete"
		}
	default:
		info.verb = strings.ToLower(r.Method)
	}
	return info, true
}

// maxPathParts is the most segments a resource path has:
// apis/<group>/<version>/watch/namespaces/<ns>/<resource>/<name>/<subresource>.
const maxPathParts = 9

// splitPath splits p into its segments, as strings.Split of p without its
// outer slashes would, into buf: parsing every request's path allocated the
// slice. ok=false when p has more segments than any resource path.
func splitPath(p string, buf *[maxPathParts]string) (parts []string, ok bool) {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil, true
	}
	parts = buf[:0]
	for len(parts) < len(buf) {
		i := strings.IndexByte(p, '/')
		if i < 0 {
			return append(parts, p), true
		}
		parts = append(parts, p[:i])
		p = p[i+1:]
	}
	return nil, false
}
