package rbac

import (
	"context"
	"reflect"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/leasehold/leasehold/internal/request"
)

func TestRulesFor(t *testing.T) {
	v := NewRulesReviewer(testPolicy())
	got := v.RulesFor(context.Background(), request.User{Name: "elector", Groups: strs(request.AllAuthenticated)}, "apps")
	want := authorizationv1.SubjectRulesReviewStatus{
		ResourceRules: []authorizationv1.ResourceRule{
			{Verbs: strs("get", "update"), APIGroups: leaseGroup, Resources: strs("leases"), ResourceNames: strs("my-app")},
			{Verbs: strs("create"), APIGroups: leaseGroup, Resources: strs("leases")},
		},
		NonResourceRules: []authorizationv1.NonResourceRule{
			{Verbs: strs("get"), NonResourceURLs: strs("/healthz", "/livez", "/readyz", "/version", "/version/")},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RulesFor(elector, apps)\n got %+v\nwant %+v", got, want)
	}

	// Cluster wide only the public paths; errors are reported, the rules
	// found still listed.
	got = v.RulesFor(context.Background(), request.User{Name: "carol", Groups: strs(request.AllAuthenticated)}, "apps")
	if len(got.ResourceRules) != 0 || len(got.NonResourceRules) != 1 || got.Incomplete ||
		got.EvaluationError != `[clusterrole.rbac.authorization.k8s.io "gone" not found, clusterrole.rbac.authorization.k8s.io "missing" not found, role.rbac.authorization.k8s.io "missing" not found, unsupported role reference kind: "Something"]` {
		t.Errorf("RulesFor(carol, apps) = %+v", got)
	}

	// Nothing at all: empty lists, not null.
	got = v.RulesFor(context.Background(), request.User{Name: "nobody"}, "")
	if got.ResourceRules == nil || got.NonResourceRules == nil || len(got.ResourceRules)+len(got.NonResourceRules) != 0 || got.EvaluationError != "" {
		t.Errorf("RulesFor(nobody) = %#v", got)
	}

	// A rule with both resources and URLs is listed as both.
	both := rbacv1.PolicyRule{Verbs: strs("get"), APIGroups: strs(""), Resources: strs("pods"), NonResourceURLs: strs("/x")}
	p := NewPolicy(Objects{ClusterRoles: []*rbacv1.ClusterRole{clusterRole("both", both)}, ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{clusterBinding("b", "both", user("u"))}})
	got = NewRulesReviewer(p).RulesFor(context.Background(), request.User{Name: "u"}, "ns")
	if len(got.ResourceRules) != 1 || len(got.NonResourceRules) != 1 {
		t.Errorf("RulesFor(u) = %+v", got)
	}
}

func TestRoleRefRules(t *testing.T) {
	p := testPolicy()
	for _, c := range []struct {
		style NotFoundStyle
		ref   rbacv1.RoleRef
		ns    string
		rules int
		err   string
	}{
		{StorageNotFound, rbacv1.RoleRef{Kind: "ClusterRole", Name: "edit-leases"}, "", 1, ""},
		{StorageNotFound, rbacv1.RoleRef{Kind: "Role", Name: "elector"}, "apps", 2, ""},
		{StorageNotFound, rbacv1.RoleRef{Kind: "Role", Name: "elector"}, "kube-system", 0, `roles.rbac.authorization.k8s.io "elector" not found`},
		{StorageNotFound, rbacv1.RoleRef{Kind: "ClusterRole", Name: "gone"}, "", 0, `clusterroles.rbac.authorization.k8s.io "gone" not found`},
		{ListerNotFound, rbacv1.RoleRef{Kind: "ClusterRole", Name: "gone"}, "", 0, `clusterrole.rbac.authorization.k8s.io "gone" not found`},
		{StorageNotFound, rbacv1.RoleRef{Kind: "Other", Name: "x"}, "", 0, `unsupported role reference kind: "Other"`},
	} {
		rules, err := NewResolver(p, c.style).RoleRefRules(c.ref, c.ns)
		if len(rules) != c.rules || (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) {
			t.Errorf("RoleRefRules(%+v, %q) = %d rules, %v; want %d, %q", c.ref, c.ns, len(rules), err, c.rules, c.err)
		}
	}
}

func TestPolicyAccessors(t *testing.T) {
	p := testPolicy()
	if b := p.ClusterRoleBindings(); len(b) != 6 || b[0].Name != "dangling" {
		t.Errorf("ClusterRoleBindings: %d, first %q", len(b), b[0].Name)
	}
	if b := p.RoleBindings("apps"); len(b) != 5 || b[0].Name != "dangling-clusterrole" {
		t.Errorf("RoleBindings(apps): %d", len(b))
	}
	if _, ok := p.ClusterRole("edit-leases"); !ok {
		t.Error("ClusterRole(edit-leases) missing")
	}
	if _, ok := p.Role("apps", "elector"); !ok {
		t.Error("Role(apps, elector) missing")
	}
	if _, ok := p.Role("kube-system", "elector"); ok {
		t.Error("Role(kube-system, elector) found")
	}
}
