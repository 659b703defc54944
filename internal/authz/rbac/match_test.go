package rbac

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/leasehold/leasehold/internal/request"
)

func res(verb, group, resource, sub, name string) *request.Attributes {
	return &request.Attributes{ResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Name: name, Namespace: "ns"}
}

func path(verb, p string) *request.Attributes {
	return &request.Attributes{Verb: verb, Path: p}
}

func TestRuleAllows(t *testing.T) {
	leases := []string{"coordination.k8s.io"}
	cases := []struct {
		name string
		rule rbacv1.PolicyRule
		attr *request.Attributes
		want bool
	}{
		{"exact", rule(strs("get"), leases, strs("leases")), res("get", "coordination.k8s.io", "leases", "", "a"), true},
		{"other verb", rule(strs("get"), leases, strs("leases")), res("update", "coordination.k8s.io", "leases", "", "a"), false},
		{"verb *", rule(strs("*"), leases, strs("leases")), res("deletecollection", "coordination.k8s.io", "leases", "", ""), true},
		{"other group", rule(strs("get"), leases, strs("leases")), res("get", "", "leases", "", "a"), false},
		{"group *", rule(strs("get"), strs("*"), strs("leases")), res("get", "x.io", "leases", "", "a"), true},
		{"core group", rule(strs("get"), strs(""), strs("nodes")), res("get", "", "nodes", "", "a"), true},
		{"other resource", rule(strs("get"), leases, strs("leases")), res("get", "coordination.k8s.io", "leasecandidates", "", "a"), false},
		{"resource *", rule(strs("get"), leases, strs("*")), res("get", "coordination.k8s.io", "leasecandidates", "", "a"), true},
		{"resource * covers subresources", rule(strs("patch"), strs(""), strs("*")), res("patch", "", "nodes", "status", "n1"), true},
		{"resource without its subresource", rule(strs("patch"), strs(""), strs("nodes")), res("patch", "", "nodes", "status", "n1"), false},
		{"res/sub", rule(strs("patch"), strs(""), strs("nodes/status")), res("patch", "", "nodes", "status", "n1"), true},
		{"res/sub is not res", rule(strs("get"), strs(""), strs("nodes/status")), res("get", "", "nodes", "", "n1"), false},
		{"res/sub other sub", rule(strs("get"), strs(""), strs("nodes/status")), res("get", "", "nodes", "proxy", "n1"), false},
		{"*/sub", rule(strs("get"), strs(""), strs("*/status")), res("get", "", "pods", "status", "p"), true},
		{"*/sub other sub", rule(strs("get"), strs(""), strs("*/status")), res("get", "", "pods", "log", "p"), false},
		{"*/sub no sub", rule(strs("get"), strs(""), strs("*/status")), res("get", "", "pods", "", "p"), false},
		{"res/* is literal", rule(strs("get"), strs(""), strs("nodes/*")), res("get", "", "nodes", "status", "n1"), false},
		{"res/* literal subresource *", rule(strs("get"), strs(""), strs("nodes/*")), res("get", "", "nodes", "*", "n1"), true},
		{"resourceNames match", rbacv1.PolicyRule{Verbs: strs("get", "update"), APIGroups: leases, Resources: strs("leases"), ResourceNames: strs("kcm")}, res("update", "coordination.k8s.io", "leases", "", "kcm"), true},
		{"resourceNames other", rbacv1.PolicyRule{Verbs: strs("get"), APIGroups: leases, Resources: strs("leases"), ResourceNames: strs("kcm")}, res("get", "coordination.k8s.io", "leases", "", "sched"), false},
		{"resourceNames never create", rbacv1.PolicyRule{Verbs: strs("create"), APIGroups: leases, Resources: strs("leases"), ResourceNames: strs("kcm")}, res("create", "coordination.k8s.io", "leases", "", ""), false},
		{"resourceNames never list", rbacv1.PolicyRule{Verbs: strs("list"), APIGroups: leases, Resources: strs("leases"), ResourceNames: strs("kcm")}, res("list", "coordination.k8s.io", "leases", "", ""), false},
		{"resourceNames never watch", rbacv1.PolicyRule{Verbs: strs("watch"), APIGroups: leases, Resources: strs("leases"), ResourceNames: strs("kcm")}, res("watch", "coordination.k8s.io", "leases", "", ""), false},
		{"resourceNames never deletecollection", rbacv1.PolicyRule{Verbs: strs("*"), APIGroups: leases, Resources: strs("leases"), ResourceNames: strs("kcm")}, res("deletecollection", "coordination.k8s.io", "leases", "", ""), false},
		{"resource rule not a path", rule(strs("get"), strs("*"), strs("*")), path("get", "/healthz"), false},
		{"path exact", urlRule(strs("get"), strs("/healthz")), path("get", "/healthz"), true},
		{"path other", urlRule(strs("get"), strs("/healthz")), path("get", "/healthz/etcd"), false},
		{"path verb", urlRule(strs("get"), strs("/healthz")), path("post", "/healthz"), false},
		{"path prefix *", urlRule(strs("get"), strs("/healthz*")), path("get", "/healthz/etcd"), true},
		{"path prefix * itself", urlRule(strs("get"), strs("/healthz*")), path("get", "/healthz"), true},
		{"path prefix * other", urlRule(strs("get"), strs("/debug/*")), path("get", "/debug"), false},
		{"path *", urlRule(strs("*"), strs("*")), path("put", "/anything"), true},
		{"path rule not a resource", urlRule(strs("*"), strs("*")), res("get", "", "nodes", "", "n"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := RuleAllows(c.attr, &c.rule); got != c.want {
				t.Errorf("RuleAllows(%+v, %+v) = %v, want %v", c.attr, c.rule, got, c.want)
			}
			if got := RulesAllow(c.attr, []rbacv1.PolicyRule{rule(strs("none"), nil, nil), c.rule}); got != c.want {
				t.Errorf("RulesAllow = %v, want %v", got, c.want)
			}
		})
	}
}
