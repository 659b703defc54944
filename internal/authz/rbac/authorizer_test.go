package rbac

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/request"
)

var leaseGroup = strs("coordination.k8s.io")

// testPolicy is a small cluster: an elector's Role, the leader-locking
// Role bound to a user and service accounts, a ClusterRole bound cluster
// wide to a group and in one namespace to a user, and bindings to roles
// that do not exist.
func testPolicy() *Policy {
	return NewPolicy(Objects{
		ClusterRoles: []*rbacv1.ClusterRole{
			clusterRole("view-leases", rule(strs("get", "list", "watch"), leaseGroup, strs("leases"))),
			clusterRole("edit-leases", rule(strs("*"), leaseGroup, strs("leases"))),
			clusterRole("system:public-info-viewer", urlRule(strs("get"), strs("/healthz", "/livez", "/readyz", "/version", "/version/"))),
			clusterRole("system:monitoring", urlRule(strs("get"), strs("/metrics", "/healthz/*", "/livez/*", "/readyz/*"))),
			clusterRole("node-status", rule(strs("patch"), strs(""), strs("nodes/status"))),
		},
		Roles: []*rbacv1.Role{
			role("kube-system", "leader-locking", rule(strs("get", "update"), leaseGroup, strs("leases"))),
			role("apps", "elector", rbacv1.PolicyRule{Verbs: strs("get", "update"), APIGroups: leaseGroup, Resources: strs("leases"), ResourceNames: strs("my-app")},
				rule(strs("create"), leaseGroup, strs("leases"))),
		},
		ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{
			clusterBinding("viewers", "view-leases", user("someone-else"), group("viewers")),
			clusterBinding("public", "system:public-info-viewer", group(request.AllAuthenticated), group(request.AllUnauthenticated)),
			clusterBinding("monitoring", "system:monitoring", group("system:monitoring")),
			clusterBinding("robot-status", "node-status", serviceAccount("kube-system", "robot")),
			clusterBinding("sa-without-namespace", "edit-leases", serviceAccount("", "robot")),
			clusterBinding("dangling", "gone", user("carol")),
		},
		RoleBindings: []*rbacv1.RoleBinding{
			roleBinding("kube-system", "leader-locking", "Role", "leader-locking", user("kcm"), serviceAccount("", "leader-election-controller"), serviceAccount("kube-system", "kcm")),
			roleBinding("apps", "elector", "Role", "elector", user("elector")),
			roleBinding("apps", "edit", "ClusterRole", "edit-leases", user("alice")),
			roleBinding("apps", "dangling-role", "Role", "missing", user("carol")),
			roleBinding("apps", "dangling-clusterrole", "ClusterRole", "missing", user("carol")),
			roleBinding("apps", "weird", "Something", "x", user("carol")),
		},
	})
}

func TestAuthorize(t *testing.T) {
	z := NewAuthorizer(testPolicy())
	sa := func(ns, name string) request.User {
		return request.User{Name: request.ServiceAccountPrefix + ns + ":" + name, Groups: strs("system:serviceaccounts", "system:serviceaccounts:"+ns, request.AllAuthenticated)}
	}
	leaseReq := func(u request.User, verb, ns, name string) *request.Attributes {
		return &request.Attributes{User: u, ResourceRequest: true, Verb: verb, APIGroup: "coordination.k8s.io", APIVersion: "v1", Namespace: ns, Resource: "leases", Name: name}
	}
	cases := []struct {
		name   string
		attr   *request.Attributes
		want   authz.Decision
		reason string
	}{
		{"group in a ClusterRoleBinding", leaseReq(request.User{Name: "v", Groups: strs("viewers")}, "list", "", ""), authz.DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "viewers" of ClusterRole "view-leases" to Group "viewers"`},
		{"ClusterRoleBinding applies in every namespace", leaseReq(request.User{Name: "v", Groups: strs("viewers")}, "get", "apps", "x"), authz.DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "viewers" of ClusterRole "view-leases" to Group "viewers"`},
		{"user in a RoleBinding of a Role", leaseReq(request.User{Name: "kcm"}, "update", "kube-system", "kube-controller-manager"), authz.DecisionAllow,
			`RBAC: allowed by RoleBinding "leader-locking/kube-system" of Role "leader-locking" to User "kcm"`},
		{"RoleBinding only in its namespace", leaseReq(request.User{Name: "kcm"}, "update", "apps", "kube-controller-manager"), authz.DecisionNoOpinion, ""},
		{"every resolution error, cluster first", leaseReq(request.User{Name: "carol"}, "get", "apps", "x"), authz.DecisionNoOpinion,
			`RBAC: [clusterrole.rbac.authorization.k8s.io "gone" not found, clusterrole.rbac.authorization.k8s.io "missing" not found, role.rbac.authorization.k8s.io "missing" not found, unsupported role reference kind: "Something"]`},
		{"RoleBinding never cluster wide", leaseReq(request.User{Name: "kcm"}, "update", "", "kube-controller-manager"), authz.DecisionNoOpinion, ""},
		{"service account, namespace from the binding", leaseReq(sa("kube-system", "leader-election-controller"), "get", "kube-system", "x"), authz.DecisionAllow,
			`RBAC: allowed by RoleBinding "leader-locking/kube-system" of Role "leader-locking" to ServiceAccount "leader-election-controller/kube-system"`},
		{"service account with its namespace", leaseReq(sa("kube-system", "kcm"), "get", "kube-system", "x"), authz.DecisionAllow,
			`RBAC: allowed by RoleBinding "leader-locking/kube-system" of Role "leader-locking" to ServiceAccount "kcm/kube-system"`},
		{"service account of another namespace", leaseReq(sa("apps", "kcm"), "get", "kube-system", "x"), authz.DecisionNoOpinion, ""},
		{"service account in a ClusterRoleBinding", &request.Attributes{User: sa("kube-system", "robot"), ResourceRequest: true, Verb: "patch", Resource: "nodes", Subresource: "status", Name: "n1"}, authz.DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "robot-status" of ClusterRole "node-status" to ServiceAccount "robot/kube-system"`},
		{"ClusterRoleBinding service account without namespace names no one", leaseReq(sa("", "robot"), "delete", "apps", "x"), authz.DecisionNoOpinion, ""},
		{"user named like a service account is one", leaseReq(request.User{Name: "system:serviceaccount:kube-system:kcm"}, "get", "kube-system", "x"), authz.DecisionAllow,
			`RBAC: allowed by RoleBinding "leader-locking/kube-system" of Role "leader-locking" to ServiceAccount "kcm/kube-system"`},
		{"RoleBinding of a ClusterRole", leaseReq(request.User{Name: "alice"}, "delete", "apps", "x"), authz.DecisionAllow,
			`RBAC: allowed by RoleBinding "edit/apps" of ClusterRole "edit-leases" to User "alice"`},
		{"RoleBinding of a ClusterRole only in its namespace", leaseReq(request.User{Name: "alice"}, "delete", "kube-system", "x"), authz.DecisionNoOpinion, ""},
		{"elector renews its lease", leaseReq(request.User{Name: "elector"}, "update", "apps", "my-app"), authz.DecisionAllow,
			`RBAC: allowed by RoleBinding "elector/apps" of Role "elector" to User "elector"`},
		{"elector creates a lease", leaseReq(request.User{Name: "elector"}, "create", "apps", ""), authz.DecisionAllow,
			`RBAC: allowed by RoleBinding "elector/apps" of Role "elector" to User "elector"`},
		{"elector cannot take another lease", leaseReq(request.User{Name: "elector"}, "update", "apps", "other"), authz.DecisionNoOpinion, ""},
		{"elector cannot list", leaseReq(request.User{Name: "elector"}, "list", "apps", ""), authz.DecisionNoOpinion, ""},
		{"the first matching subject is named", leaseReq(request.User{Name: "someone-else", Groups: strs("viewers")}, "watch", "", ""), authz.DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "viewers" of ClusterRole "view-leases" to User "someone-else"`},
		{"missing ClusterRole of a ClusterRoleBinding", leaseReq(request.User{Name: "carol"}, "get", "", "x"), authz.DecisionNoOpinion,
			`RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found`},
		{"missing roles, but another binding allows", leaseReq(request.User{Name: "carol", Groups: strs("viewers")}, "get", "apps", "x"), authz.DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "viewers" of ClusterRole "view-leases" to Group "viewers"`},
		{"anonymous health", &request.Attributes{User: request.User{Name: request.AnonymousUser, Groups: strs(request.AllUnauthenticated)}, Verb: "get", Path: "/healthz"}, authz.DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "public" of ClusterRole "system:public-info-viewer" to Group "system:unauthenticated"`},
		{"anonymous metrics", &request.Attributes{User: request.User{Name: request.AnonymousUser, Groups: strs(request.AllUnauthenticated)}, Verb: "get", Path: "/metrics"}, authz.DecisionNoOpinion, ""},
		{"monitoring metrics", &request.Attributes{User: request.User{Name: "prom", Groups: strs("system:monitoring", request.AllAuthenticated)}, Verb: "get", Path: "/metrics"}, authz.DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "monitoring" of ClusterRole "system:monitoring" to Group "system:monitoring"`},
		{"monitoring health subpath", &request.Attributes{User: request.User{Name: "prom", Groups: strs("system:monitoring")}, Verb: "get", Path: "/readyz/etcd"}, authz.DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "monitoring" of ClusterRole "system:monitoring" to Group "system:monitoring"`},
		{"unknown user", leaseReq(request.User{Name: "nobody", Groups: strs("nothing")}, "get", "apps", "x"), authz.DecisionNoOpinion, ""},
		{"masters mean nothing to RBAC", leaseReq(request.User{Name: "admin", Groups: strs(request.SystemPrivilegedGroup)}, "get", "apps", "x"), authz.DecisionNoOpinion, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, reason, err := z.Authorize(context.Background(), c.attr)
			if err != nil || d != c.want || reason != c.reason {
				t.Errorf("Authorize = %v, %q, %v\nwant       %v, %q", d, reason, err, c.want, c.reason)
			}
		})
	}
}

// Bindings are walked in name order, ClusterRoleBindings before RoleBindings.
func TestAuthorizeOrder(t *testing.T) {
	p := NewPolicy(Objects{
		ClusterRoles: []*rbacv1.ClusterRole{clusterRole("all", rule(strs("*"), strs("*"), strs("*")))},
		ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{
			clusterBinding("b", "all", group("g2")),
			clusterBinding("a", "all", group("g1")),
		},
		RoleBindings: []*rbacv1.RoleBinding{roleBinding("ns", "0", "ClusterRole", "all", user("u"))},
	})
	a := &request.Attributes{User: request.User{Name: "u", Groups: strs("g2", "g1")}, ResourceRequest: true, Verb: "get", Namespace: "ns", Resource: "pods", Name: "p"}
	_, reason, _ := NewAuthorizer(p).Authorize(context.Background(), a)
	if want := `RBAC: allowed by ClusterRoleBinding "a" of ClusterRole "all" to Group "g1"`; reason != want {
		t.Errorf("reason %q, want %q", reason, want)
	}
}

// More groups than candidates merges on the stack still find every binding.
func TestAuthorizeManyGroups(t *testing.T) {
	var crbs []*rbacv1.ClusterRoleBinding
	var groups []string
	for i := range 20 {
		g := string(rune('a' + i))
		groups = append(groups, g)
		crbs = append(crbs, clusterBinding("b-"+g, "none", group(g)))
	}
	crbs = append(crbs, clusterBinding("z", "all", group("t")))
	p := NewPolicy(Objects{
		ClusterRoles:        []*rbacv1.ClusterRole{clusterRole("all", rule(strs("*"), strs("*"), strs("*"))), clusterRole("none")},
		ClusterRoleBindings: crbs,
	})
	a := &request.Attributes{User: request.User{Name: "u", Groups: groups}, ResourceRequest: true, Verb: "get", Resource: "pods"}
	d, reason, _ := NewAuthorizer(p).Authorize(context.Background(), a)
	if want := `RBAC: allowed by ClusterRoleBinding "z" of ClusterRole "all" to Group "t"`; d != authz.DecisionAllow || reason != want {
		t.Errorf("got %v %q, want allow %q", d, reason, want)
	}
}
