package bootstrappolicy_test

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/leasehold/leasehold/internal/bootstrappolicy"
	"github.com/leasehold/leasehold/internal/registry/rbac"
)

// TestPolicyIsValid runs every bootstrap object through the RBAC API's own
// validation and checks the metadata reconciliation relies on.
func TestPolicyIsValid(t *testing.T) {
	checkMeta := func(kind, ns, name string, labels, annotations map[string]string) {
		t.Helper()
		if msgs := rbac.ValidateName(name, false); len(msgs) > 0 {
			t.Errorf("%s %s: bad name: %v", kind, name, msgs)
		}
		if labels[bootstrappolicy.BootstrappingLabel] != bootstrappolicy.BootstrappingValue {
			t.Errorf("%s %s/%s lacks the bootstrapping label", kind, ns, name)
		}
		if annotations[rbacv1.AutoUpdateAnnotationKey] != "true" {
			t.Errorf("%s %s/%s lacks autoupdate=true", kind, ns, name)
		}
	}
	clusterRoles := map[string]bool{}
	for _, r := range bootstrappolicy.ClusterRoles() {
		checkMeta("ClusterRole", "", r.Name, r.Labels, r.Annotations)
		if clusterRoles[r.Name] {
			t.Errorf("ClusterRole %s listed twice", r.Name)
		}
		clusterRoles[r.Name] = true
		if errs := rbac.ValidateClusterRole(&r); len(errs) > 0 {
			t.Errorf("ClusterRole %s: %v", r.Name, errs.ToAggregate())
		}
		checkSorted(t, r.Name, r.Rules)
	}
	seen := map[string]bool{}
	for _, b := range bootstrappolicy.ClusterRoleBindings() {
		checkMeta("ClusterRoleBinding", "", b.Name, b.Labels, b.Annotations)
		if seen[b.Name] {
			t.Errorf("ClusterRoleBinding %s listed twice", b.Name)
		}
		seen[b.Name] = true
		if errs := rbac.ValidateBinding(b.RoleRef, b.Subjects, false); len(errs) > 0 {
			t.Errorf("ClusterRoleBinding %s: %v", b.Name, errs.ToAggregate())
		}
		if !clusterRoles[b.RoleRef.Name] {
			t.Errorf("ClusterRoleBinding %s refers to missing ClusterRole %s", b.Name, b.RoleRef.Name)
		}
	}
	roles := map[string]bool{}
	for _, r := range bootstrappolicy.NamespaceRoles() {
		checkMeta("Role", r.Namespace, r.Name, r.Labels, r.Annotations)
		roles[r.Namespace+"/"+r.Name] = true
		if errs := rbac.ValidateRules(r.Rules, true); len(errs) > 0 {
			t.Errorf("Role %s: %v", r.Name, errs.ToAggregate())
		}
		checkSorted(t, r.Name, r.Rules)
	}
	for _, b := range bootstrappolicy.NamespaceRoleBindings() {
		checkMeta("RoleBinding", b.Namespace, b.Name, b.Labels, b.Annotations)
		if errs := rbac.ValidateBinding(b.RoleRef, b.Subjects, true); len(errs) > 0 {
			t.Errorf("RoleBinding %s: %v", b.Name, errs.ToAggregate())
		}
		if b.RoleRef.Kind == "Role" && !roles[b.Namespace+"/"+b.RoleRef.Name] {
			t.Errorf("RoleBinding %s refers to missing Role %s", b.Name, b.RoleRef.Name)
		}
	}
}

func checkSorted(t *testing.T, role string, rules []rbacv1.PolicyRule) {
	t.Helper()
	for i, r := range rules {
		for _, l := range [][]string{r.Verbs, r.APIGroups, r.Resources, r.ResourceNames, r.NonResourceURLs} {
			if !slices.IsSorted(l) {
				t.Errorf("%s rule %d: %v is not sorted", role, i, l)
			}
		}
	}
}

// TestControllersAreBound: every built-in controller has its role, bound to
// its service account in kube-system and nothing else.
func TestControllersAreBound(t *testing.T) {
	bindings := map[string]rbacv1.ClusterRoleBinding{}
	for _, b := range bootstrappolicy.ClusterRoleBindings() {
		bindings[b.Name] = b
	}
	for _, name := range []string{
		bootstrappolicy.GarbageCollector, bootstrappolicy.NodeController, bootstrappolicy.NamespaceController,
		bootstrappolicy.ClusterRoleAggregationController, bootstrappolicy.LeaderElectionController,
		bootstrappolicy.APIServerIdentityController, bootstrappolicy.EventTTLController,
		bootstrappolicy.LeaseCandidateGCController,
	} {
		b, ok := bindings[bootstrappolicy.ControllerRolePrefix+name]
		if !ok {
			t.Errorf("no binding for controller %s", name)
			continue
		}
		want := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: name}}
		if !slices.Equal(b.Subjects, want) || b.RoleRef.Name != b.Name {
			t.Errorf("binding %s = %+v", b.Name, b)
		}
	}
	if got := bootstrappolicy.ControllerUser(bootstrappolicy.GarbageCollector); got != "system:serviceaccount:kube-system:generic-garbage-collector" {
		t.Errorf("ControllerUser = %q", got)
	}
}

// TestSystemNodeIsUnbound: system:node exists but binds no one (the Node
// authorizer authorizes nodes), as upstream since 1.8.
func TestSystemNodeIsUnbound(t *testing.T) {
	for _, b := range bootstrappolicy.ClusterRoleBindings() {
		if b.Name == bootstrappolicy.SystemNode && len(b.Subjects) != 0 {
			t.Errorf("system:node is bound to %v", b.Subjects)
		}
	}
}
