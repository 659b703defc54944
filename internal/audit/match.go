package audit

import (
	"slices"
	"strings"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/leasehold/leasehold/internal/request"
)

// ruleMatches reports whether r applies to a request, with the semantics of
// kube-apiserver's policy checker: every field the rule sets must match;
// namespaces or resources make it a rule for resource requests only, else
// nonResourceURLs make it one for non-resource requests only, else it
// applies to both.
func ruleMatches(r *auditv1.PolicyRule, a *request.Attributes) bool {
	if len(r.Users) > 0 && !slices.Contains(r.Users, a.User.Name) {
		return false
	}
	if len(r.UserGroups) > 0 && !slices.ContainsFunc(a.User.Groups, func(g string) bool {
		return slices.Contains(r.UserGroups, g)
	}) {
		return false
	}
	if len(r.Verbs) > 0 && !slices.Contains(r.Verbs, a.Verb) {
		return false
	}
	if len(r.Namespaces) > 0 || len(r.Resources) > 0 {
		return resourceMatches(r, a)
	}
	if len(r.NonResourceURLs) > 0 {
		return !a.ResourceRequest && slices.ContainsFunc(r.NonResourceURLs, func(spec string) bool {
			return pathMatches(a.Path, spec)
		})
	}
	return true
}

// pathMatches matches a non-resource URL spec: "*", the exact path, or a
// prefix ending in "*".
func pathMatches(path, spec string) bool {
	if spec == "*" || spec == path {
		return true
	}
	return strings.HasSuffix(spec, "*") && strings.HasPrefix(path, strings.TrimRight(spec, "*"))
}

// resourceMatches matches the namespaces ("" is cluster-scoped) and the
// group resources of a rule against a resource request.
func resourceMatches(r *auditv1.PolicyRule, a *request.Attributes) bool {
	if !a.ResourceRequest {
		return false
	}
	if len(r.Namespaces) > 0 && !slices.Contains(r.Namespaces, a.Namespace) {
		return false
	}
	if len(r.Resources) == 0 {
		return true
	}
	for i := range r.Resources {
		if groupResourceMatches(&r.Resources[i], a) {
			return true
		}
	}
	return false
}

// groupResourceMatches matches one group's entry: an empty resource list is
// the whole group; a resource is "*", "res", "res/sub", "*/sub" or "res/*";
// resourceNames, when set, must name the object.
func groupResourceMatches(gr *auditv1.GroupResources, a *request.Attributes) bool {
	if gr.Group != a.APIGroup && gr.Group != "*" {
		return false
	}
	if len(gr.Resources) == 0 {
		return true
	}
	if len(gr.ResourceNames) > 0 && !slices.Contains(gr.ResourceNames, a.Name) {
		return false
	}
	combined := a.Resource
	if a.Subresource != "" {
		combined = a.Resource + "/" + a.Subresource
	}
	for _, res := range gr.Resources {
		switch {
		case res == "*" || res == combined:
			return true
		case a.Subresource != "" && strings.HasPrefix(res, "*/") && res[2:] == a.Subresource:
			return true
		case strings.HasSuffix(res, "/*") && res[:len(res)-2] == a.Resource:
			return true
		}
	}
	return false
}
