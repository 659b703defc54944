package bootstrappolicy

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ControllerRolePrefix starts every controller's ClusterRole and
// ClusterRoleBinding name; the rest is the controller's service account in
// kube-system, whose user is system:serviceaccount:kube-system:<name>.
const ControllerRolePrefix = "system:controller:"

// The built-in controllers' service account names. The first four are
// upstream's; the others are Leasehold's own.
const (
	GarbageCollector                 = "generic-garbage-collector"
	NodeController                   = "node-controller"
	NamespaceController              = "namespace-controller"
	ClusterRoleAggregationController = "clusterrole-aggregation-controller"
	LeaderElectionController         = "leader-election-controller"
	APIServerIdentityController      = "apiserver-identity-controller"
	EventTTLController               = "event-ttl-controller"
	LeaseCandidateGCController       = "leasecandidate-gc-controller"
)

// ControllerUser is the user a controller acts as.
func ControllerUser(name string) string {
	return "system:serviceaccount:" + metav1.NamespaceSystem + ":" + name
}

// controllerRules are each controller's rules, by service account name.
func controllerRules() []struct {
	name  string
	rules []rbacv1.PolicyRule
} {
	return []struct {
		name  string
		rules []rbacv1.PolicyRule
	}{
		{ClusterRoleAggregationController, []rbacv1.PolicyRule{
			// Must be able to write any rules into an aggregated role.
			rule(verbs("escalate", "get", "list", "watch", "update", "patch"), groups(rbacGroup), "clusterroles"),
		}},
		{GarbageCollector, []rbacv1.PolicyRule{
			// Reads and deletes dependents of any kind and rewrites their
			// owner references and finalizers.
			rule(verbs("get", "list", "watch", "patch", "update", "delete"), groups("*"), "*"),
			eventsRule(),
		}},
		{NamespaceController, []rbacv1.PolicyRule{
			rule(verbs("get", "list", "watch", "delete"), groups(legacyGroup), "namespaces"),
			rule(verbs("update"), groups(legacyGroup), "namespaces/finalize", "namespaces/status"),
			rule(verbs("get", "list", "watch", "delete", "deletecollection"), groups("*"), "*"),
		}},
		{NodeController, []rbacv1.PolicyRule{
			rule(verbs("get", "list", "watch", "update", "delete", "patch"), groups(legacyGroup), "nodes"),
			rule(verbs("patch", "update"), groups(legacyGroup), "nodes/status"),
			rule(verbs("patch", "update"), groups(legacyGroup), "pods/status"),
			rule(verbs("list", "watch", "get", "delete"), groups(legacyGroup), "pods"),
			eventsRule(),
		}},
		{LeaderElectionController, []rbacv1.PolicyRule{
			// Picks and installs leaders of coordinated elections in any
			// namespace, and pings candidates.
			rule(verbs("get", "create", "update"), groups(coordinationGroup), "leases"),
			rule(verbs("get", "update"), groups(coordinationGroup), "leasecandidates"),
		}},
		{APIServerIdentityController, []rbacv1.PolicyRule{
			// Renews this replica's identity lease and deletes expired ones.
			rule(verbs("get", "create", "update", "delete"), groups(coordinationGroup), "leases"),
		}},
		{EventTTLController, []rbacv1.PolicyRule{
			rule(verbs("delete"), groups(legacyGroup), "events"),
		}},
		{LeaseCandidateGCController, []rbacv1.PolicyRule{
			rule(verbs("get", "delete"), groups(coordinationGroup), "leasecandidates"),
		}},
	}
}

func controllerRoles() []rbacv1.ClusterRole {
	var out []rbacv1.ClusterRole
	for _, c := range controllerRules() {
		out = append(out, rbacv1.ClusterRole{ObjectMeta: meta("", ControllerRolePrefix+c.name), Rules: c.rules})
	}
	return out
}

func controllerRoleBindings() []rbacv1.ClusterRoleBinding {
	var out []rbacv1.ClusterRoleBinding
	for _, c := range controllerRules() {
		out = append(out, clusterBinding(ControllerRolePrefix+c.name, serviceAccountSubject(metav1.NamespaceSystem, c.name)))
	}
	return out
}
