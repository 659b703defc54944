package rbac

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/request"
)

// fields splits a fuzzed string into a list: "," separates items, and an
// empty string is no list at all.
func fields(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// FuzzRuleMatcher checks the matcher against an independent one: whenever
// RuleAllows (or the whole authorizer, with the rule bound to the caller)
// allows a request, Kubernetes' policy comparator (Covers) agrees that the
// rule covers the request written as a rule; and the authorizer allows
// exactly when RuleAllows does. Nothing may panic.
func FuzzRuleMatcher(f *testing.F) {
	f.Add("get,update", "coordination.k8s.io", "leases", "my-app", "", true, "update", "coordination.k8s.io", "leases", "", "my-app", "")
	f.Add("*", "*", "*/status", "", "", true, "patch", "", "nodes", "status", "n1", "")
	f.Add("create", "", "pods", "x", "", true, "create", "", "pods", "", "", "")
	f.Add("get", "", "", "", "/healthz*", false, "get", "", "", "", "", "/healthz/etcd")
	f.Add("*", "", "", "", "*", false, "post", "", "", "", "", "/")
	f.Add("get", "", "nodes/*", "", "", true, "get", "", "nodes", "*", "", "")
	f.Fuzz(func(t *testing.T, verbs, groups, resources, names, urls string, resourceRequest bool, verb, apiGroup, resource, sub, name, path string) {
		rule := rbacv1.PolicyRule{Verbs: fields(verbs), APIGroups: fields(groups), Resources: fields(resources), ResourceNames: fields(names), NonResourceURLs: fields(urls)}
		a := &request.Attributes{
			User:            request.User{Name: "u", Groups: []string{"g"}},
			ResourceRequest: resourceRequest, Verb: verb, APIGroup: apiGroup, Resource: resource, Subresource: sub, Name: name, Path: path, Namespace: "ns",
		}
		allowed := RuleAllows(a, &rule)

		p := NewPolicy(Objects{
			ClusterRoles:        []*rbacv1.ClusterRole{clusterRole("r", rule)},
			ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{clusterBinding("b", "r", group("g"))},
		})
		d, reason, err := NewAuthorizer(p).Authorize(context.Background(), a)
		if err != nil || (d == authz.DecisionAllow) != allowed || d == authz.DecisionDeny {
			t.Fatalf("Authorize = %v, %q, %v; RuleAllows = %v", d, reason, err, allowed)
		}
		if !allowed {
			return
		}
		owner, asked := rule, rbacv1.PolicyRule{Verbs: []string{verb}}
		if resourceRequest {
			// Request parsing never yields a resource with a "/" in it, and
			// the comparator reads the first "/" as the subresource's start.
			if strings.Contains(resource, "/") {
				return
			}
			combined := resource
			if sub != "" {
				combined += "/" + sub
			}
			asked.APIGroups, asked.Resources, asked.ResourceNames = []string{apiGroup}, []string{combined}, []string{name}
		} else {
			// Non-resource requests ignore every resource field of a rule,
			// which the comparator does not.
			owner = rbacv1.PolicyRule{Verbs: rule.Verbs, NonResourceURLs: rule.NonResourceURLs}
			asked.NonResourceURLs = []string{path}
		}
		if covered, _ := validation.Covers([]rbacv1.PolicyRule{owner}, []rbacv1.PolicyRule{asked}); !covered {
			t.Fatalf("%+v allows %+v, but does not cover %+v", rule, a, asked)
		}
	})
}
