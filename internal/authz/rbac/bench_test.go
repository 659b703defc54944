package rbac

import (
	"context"
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/request"
)

// bootstrapLike is shaped like a fresh cluster's policy: about 60
// bindings, most of them controller service accounts in kube-system, a few
// for system:authenticated (which every caller walks), and the elector's
// RoleBinding in its own namespace.
func bootstrapLike() *Policy {
	o := Objects{
		ClusterRoles: []*rbacv1.ClusterRole{
			clusterRole("cluster-admin", rule(strs("*"), strs("*"), strs("*")), urlRule(strs("*"), strs("*"))),
			clusterRole("system:basic-user", rule(strs("create"), strs("authorization.k8s.io"), strs("selfsubjectaccessreviews", "selfsubjectrulesreviews"))),
			clusterRole("system:discovery", urlRule(strs("get"), strs("/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"))),
			clusterRole("system:public-info-viewer", urlRule(strs("get"), strs("/healthz", "/livez", "/readyz", "/version", "/version/"))),
		},
		ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{
			clusterBinding("cluster-admin", "cluster-admin", group(request.SystemPrivilegedGroup)),
			clusterBinding("system:basic-user", "system:basic-user", group(request.AllAuthenticated)),
			clusterBinding("system:discovery", "system:discovery", group(request.AllAuthenticated)),
			clusterBinding("system:public-info-viewer", "system:public-info-viewer", group(request.AllAuthenticated), group(request.AllUnauthenticated)),
		},
		Roles: []*rbacv1.Role{
			role("apps", "elector", rbacv1.PolicyRule{Verbs: strs("get", "update"), APIGroups: leaseGroup, Resources: strs("leases"), ResourceNames: strs("my-app")},
				rule(strs("create"), leaseGroup, strs("leases"))),
		},
		RoleBindings: []*rbacv1.RoleBinding{roleBinding("apps", "elector", "Role", "elector", user("elector"))},
	}
	for i := range 50 {
		name := fmt.Sprintf("system:controller:c%02d", i)
		o.ClusterRoles = append(o.ClusterRoles, clusterRole(name,
			rule(strs("get", "list", "watch"), strs(""), strs("nodes", "pods")),
			rule(strs("create", "patch", "update"), strs("", "events.k8s.io"), strs("events"))))
		o.ClusterRoleBindings = append(o.ClusterRoleBindings, clusterBinding(name, name, serviceAccount("kube-system", fmt.Sprintf("c%02d", i))))
	}
	for i := range 6 {
		name := fmt.Sprintf("system::leader-locking-%d", i)
		o.Roles = append(o.Roles, role("kube-system", name, rule(strs("get", "update"), leaseGroup, strs("leases"))))
		o.RoleBindings = append(o.RoleBindings, roleBinding("kube-system", name, "Role", name, user(fmt.Sprintf("system:c%d", i))))
	}
	return NewPolicy(o)
}

// BenchmarkAuthorizeElectorRenewal is an elector's lease update, allowed
// by its RoleBinding after the cluster-wide bindings of its groups.
func BenchmarkAuthorizeElectorRenewal(b *testing.B) {
	z := NewAuthorizer(bootstrapLike())
	a := &request.Attributes{
		User:            request.User{Name: "elector", Groups: strs(request.AllAuthenticated)},
		ResourceRequest: true, Verb: "update", APIGroup: "coordination.k8s.io", APIVersion: "v1",
		Namespace: "apps", Resource: "leases", Name: "my-app",
	}
	ctx := context.Background()
	if d, reason, _ := z.Authorize(ctx, a); d != authz.DecisionAllow {
		b.Fatalf("not allowed: %q", reason)
	}
	b.ReportAllocs()
	for b.Loop() {
		z.Authorize(ctx, a)
	}
}

// BenchmarkAuthorizeNoOpinion is a request no binding allows.
func BenchmarkAuthorizeNoOpinion(b *testing.B) {
	z := NewAuthorizer(bootstrapLike())
	a := &request.Attributes{
		User:            request.User{Name: "elector", Groups: strs(request.AllAuthenticated)},
		ResourceRequest: true, Verb: "delete", APIGroup: "coordination.k8s.io", APIVersion: "v1",
		Namespace: "kube-system", Resource: "leases", Name: "kube-scheduler",
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		z.Authorize(ctx, a)
	}
}

// BenchmarkNewPolicy is the rebuild CacheSource does after a burst of
// changes.
func BenchmarkNewPolicy(b *testing.B) {
	p := bootstrapLike()
	o := Objects{ClusterRoleBindings: p.ClusterRoleBindings(), RoleBindings: append(p.RoleBindings("apps"), p.RoleBindings("kube-system")...)}
	for _, r := range p.clusterRoles {
		o.ClusterRoles = append(o.ClusterRoles, r)
	}
	for _, byName := range p.roles {
		for _, r := range byName {
			o.Roles = append(o.Roles, r)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		NewPolicy(o)
	}
}

// The allow path allocates nothing (the benchmark's figure, as a test).
func TestAuthorizeAllowDoesNotAllocate(t *testing.T) {
	z := NewAuthorizer(bootstrapLike())
	a := &request.Attributes{
		User:            request.User{Name: "elector", Groups: strs(request.AllAuthenticated)},
		ResourceRequest: true, Verb: "update", APIGroup: "coordination.k8s.io", Namespace: "apps", Resource: "leases", Name: "my-app",
	}
	if n := testing.AllocsPerRun(100, func() { _, _, _ = z.Authorize(context.Background(), a) }); n != 0 {
		t.Errorf("Authorize allocates %v times per allowed request", n)
	}
}
