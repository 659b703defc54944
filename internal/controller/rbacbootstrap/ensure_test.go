package rbacbootstrap_test

import (
	"context"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/leasehold/leasehold/internal/bootstrappolicy"
	"github.com/leasehold/leasehold/internal/controller/rbacbootstrap"
	"github.com/leasehold/leasehold/internal/server/servertest"
)

// versions maps every bootstrap object that is not aggregated (the
// aggregation controller may write those at any time) to its
// resourceVersion.
func versions(t *testing.T, c kubernetes.Interface) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for _, r := range bootstrappolicy.ClusterRoles() {
		got, err := c.RbacV1().ClusterRoles().Get(ctx, r.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("ClusterRole %s: %v", r.Name, err)
		}
		if r.AggregationRule == nil {
			out["clusterrole/"+r.Name] = got.ResourceVersion
		}
	}
	for _, b := range bootstrappolicy.ClusterRoleBindings() {
		got, err := c.RbacV1().ClusterRoleBindings().Get(ctx, b.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("ClusterRoleBinding %s: %v", b.Name, err)
		}
		out["clusterrolebinding/"+b.Name] = got.ResourceVersion
	}
	for _, r := range bootstrappolicy.NamespaceRoles() {
		got, err := c.RbacV1().Roles(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("Role %s: %v", r.Name, err)
		}
		out["role/"+r.Name] = got.ResourceVersion
	}
	for _, b := range bootstrappolicy.NamespaceRoleBindings() {
		got, err := c.RbacV1().RoleBindings(b.Namespace).Get(ctx, b.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("RoleBinding %s: %v", b.Name, err)
		}
		out["rolebinding/"+b.Name] = got.ResourceVersion
	}
	return out
}

// TestEnsureCreatesAndIsIdempotent: the first run creates the whole
// policy as written; a second run writes nothing.
func TestEnsureCreatesAndIsIdempotent(t *testing.T) {
	srv := servertest.Start(t)
	ctx := context.Background()
	if err := rbacbootstrap.Ensure(ctx, srv.Client); err != nil {
		t.Fatalf("first Ensure: %v", err)
	}
	first := versions(t, srv.Client)
	got, err := srv.Client.RbacV1().ClusterRoles().Get(ctx, "system:controller:node-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range bootstrappolicy.ClusterRoles() {
		if want.Name == got.Name && !equality.Semantic.DeepEqual(want.Rules, got.Rules) {
			t.Errorf("stored rules %+v, want %+v", got.Rules, want.Rules)
		}
	}
	if err := rbacbootstrap.Ensure(ctx, srv.Client); err != nil {
		t.Fatalf("second Ensure: %v", err)
	}
	if second := versions(t, srv.Client); !equality.Semantic.DeepEqual(first, second) {
		for k, v := range second {
			if first[k] != v {
				t.Errorf("second Ensure rewrote %s (%s -> %s)", k, first[k], v)
			}
		}
	}
}

// TestEnsureIsAdditive: missing rules and subjects come back, what an
// administrator added stays, and autoupdate=false protects an object.
func TestEnsureIsAdditive(t *testing.T) {
	srv := servertest.Start(t)
	ctx := context.Background()
	crs, crbs := srv.Client.RbacV1().ClusterRoles(), srv.Client.RbacV1().ClusterRoleBindings()
	if err := rbacbootstrap.Ensure(ctx, srv.Client); err != nil {
		t.Fatal(err)
	}

	// An admin drops one rule of system:basic-user and adds one of its own.
	extra := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"namespaces"}}
	basic, err := crs.Get(ctx, "system:basic-user", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantRules := slices.Clone(basic.Rules)
	basic.Rules = append(basic.Rules[1:], extra)
	if _, err := crs.Update(ctx, basic, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// ... adds a subject to a binding and removes the bootstrap one.
	adminBinding, err := crbs.Get(ctx, "cluster-admin", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ops := rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: "ops"}
	adminBinding.Subjects = []rbacv1.Subject{ops}
	if _, err := crbs.Update(ctx, adminBinding, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// ... and opts system:monitoring out of updates, emptying it.
	mon, err := crs.Get(ctx, bootstrappolicy.SystemMonitoring, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mon.Annotations[rbacv1.AutoUpdateAnnotationKey] = "false"
	mon.Rules = []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}}}
	if _, err := crs.Update(ctx, mon, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// ... and deletes a Role.
	if err := srv.Client.RbacV1().Roles("kube-system").Delete(ctx, bootstrappolicy.LeaderLockingKubeScheduler, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := rbacbootstrap.Ensure(ctx, srv.Client); err != nil {
		t.Fatal(err)
	}
	basic, err = crs.Get(ctx, "system:basic-user", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Missing rules come back broken down per resource, as upstream's
	// reconciliation adds them: what counts is that they are covered.
	if covered, missing := validation.Covers(basic.Rules, append(wantRules, extra)); !covered {
		t.Errorf("system:basic-user lacks %+v: %+v", missing, basic.Rules)
	}
	adminBinding, err = crbs.Get(ctx, "cluster-admin", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	masters := rbacv1.Subject{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "system:masters"}
	if !slices.Contains(adminBinding.Subjects, ops) || !slices.Contains(adminBinding.Subjects, masters) {
		t.Errorf("cluster-admin subjects %+v", adminBinding.Subjects)
	}
	mon, err = crs.Get(ctx, bootstrappolicy.SystemMonitoring, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(mon.Rules) != 1 || len(mon.Rules[0].NonResourceURLs) != 1 {
		t.Errorf("protected system:monitoring was changed: %+v", mon.Rules)
	}
	if _, err := srv.Client.RbacV1().Roles("kube-system").Get(ctx, bootstrappolicy.LeaderLockingKubeScheduler, metav1.GetOptions{}); err != nil {
		t.Errorf("deleted Role not recreated: %v", err)
	}
}

// TestEnsureStopsWithContext: a cancelled context ends Ensure early with
// the context's error.
func TestEnsureStopsWithContext(t *testing.T) {
	srv := servertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := rbacbootstrap.Ensure(ctx, srv.Client); err == nil {
		t.Fatal("Ensure with a cancelled context succeeded")
	}
}
