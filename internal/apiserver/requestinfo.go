package apiserver

import (
	"net/http"
	"strings"
)

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
	parts := splitPath(r.URL.Path)
	switch {
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
		if len(parts) == 3 && parts[2] == "status" {
			info.resource, info.name, info.subresource = "namespaces", parts[1], "status"
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
	q := r.URL.Query()
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case info.name != "":
			info.verb = "get"
		case watchPath || isTrue(q.Get("watch")):
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

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

func isTrue(s string) bool { return s == "true" || s == "1" }
