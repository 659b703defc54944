package rbac

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/leasehold/leasehold/internal/request"
)

// RuleAllows reports whether rule allows the request a, as Kubernetes'
// RBAC RuleAllows: for a resource request verb, API group, resource (or
// resource/subresource, with the `*` and `*/subresource` wildcards) and
// resource name must all match; for any other request verb and path (exact,
// `*`, or a prefix ending in `*`). It allocates nothing: the renewal path
// calls it for every rule of every binding that names the caller.
func RuleAllows(a *request.Attributes, rule *rbacv1.PolicyRule) bool {
	if a.ResourceRequest {
		return verbMatches(rule, a.Verb) &&
			apiGroupMatches(rule, a.APIGroup) &&
			resourceMatches(rule, a.Resource, a.Subresource) &&
			resourceNameMatches(rule, a.Name)
	}
	return verbMatches(rule, a.Verb) && nonResourceURLMatches(rule, a.Path)
}

// RulesAllow reports whether any of rules allows a.
func RulesAllow(a *request.Attributes, rules []rbacv1.PolicyRule) bool {
	for i := range rules {
		if RuleAllows(a, &rules[i]) {
			return true
		}
	}
	return false
}

func verbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	for _, v := range rule.Verbs {
		if v == rbacv1.VerbAll || v == verb {
			return true
		}
	}
	return false
}

func apiGroupMatches(rule *rbacv1.PolicyRule, group string) bool {
	for _, g := range rule.APIGroups {
		if g == rbacv1.APIGroupAll || g == group {
			return true
		}
	}
	return false
}

// resourceMatches compares each rule resource with "resource/subresource"
// (just resource when there is no subresource) without building that
// string.
func resourceMatches(rule *rbacv1.PolicyRule, resource, subresource string) bool {
	for _, r := range rule.Resources {
		if r == rbacv1.ResourceAll {
			return true
		}
		if subresource == "" {
			if r == resource {
				return true
			}
			continue
		}
		if isCombined(r, resource, subresource) {
			return true
		}
		// "*/subresource" matches that subresource of every resource.
		if len(r) == len(subresource)+2 && strings.HasPrefix(r, "*/") && r[2:] == subresource {
			return true
		}
	}
	return false
}

// isCombined reports whether r == resource + "/" + subresource.
func isCombined(r, resource, subresource string) bool {
	return len(r) == len(resource)+1+len(subresource) &&
		r[:len(resource)] == resource &&
		r[len(resource)] == '/' &&
		r[len(resource)+1:] == subresource
}

// resourceNameMatches: a rule without resourceNames matches every name; one
// with resourceNames matches only those, so never a request without a name
// (create, list, watch, deletecollection).
func resourceNameMatches(rule *rbacv1.PolicyRule, name string) bool {
	if len(rule.ResourceNames) == 0 {
		return true
	}
	for _, n := range rule.ResourceNames {
		if n == name {
			return true
		}
	}
	return false
}

func nonResourceURLMatches(rule *rbacv1.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		if u == rbacv1.NonResourceAll || u == path {
			return true
		}
		if strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimRight(u, "*")) {
			return true
		}
	}
	return false
}
