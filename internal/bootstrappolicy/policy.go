package bootstrappolicy

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Names of the roles and groups other packages refer to.
const (
	ClusterAdmin     = "cluster-admin"
	Admin            = "admin"
	Edit             = "edit"
	View             = "view"
	SystemNode       = "system:node"
	SystemMonitoring = "system:monitoring"
	// MonitoringGroup is the group system:monitoring is bound to.
	MonitoringGroup = "system:monitoring"
	// KubeControllerManager and KubeScheduler are the component users.
	KubeControllerManager = "system:kube-controller-manager"
	// ControllerManagerLease is the Lease in kube-system that `serve`
	// replicas elect their controller manager on, as
	// KubeControllerManager (kube-controller-manager's own is
	// "kube-controller-manager").
	ControllerManagerLease = "leasehold-controller-manager"
	KubeScheduler          = "system:kube-scheduler"

	// The labels that aggregate roles into admin, edit and view.
	AggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	AggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	AggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

// aggregate is an aggregation rule selecting ClusterRoles labelled label=true.
func aggregate(label string) *rbacv1.AggregationRule {
	return &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{label: "true"}}}}
}

// ClusterRoles are the cluster-wide roles, controllers' roles included.
func ClusterRoles() []rbacv1.ClusterRole {
	roles := []rbacv1.ClusterRole{
		{
			// Everything, everywhere.
			ObjectMeta: meta("", ClusterAdmin),
			Rules:      []rbacv1.PolicyRule{rule(verbs("*"), groups("*"), "*"), urls(verbs("*"), "*")},
		},
		{
			// Enough to find out whether the server is up and what it serves.
			ObjectMeta: meta("", "system:discovery"),
			Rules: []rbacv1.PolicyRule{urls(verbs("get"),
				"/livez", "/readyz", "/healthz", "/version", "/version/",
				"/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*")},
		},
		{
			// What a user may ask about itself (kubectl auth can-i, whoami).
			ObjectMeta: meta("", "system:basic-user"),
			Rules: []rbacv1.PolicyRule{
				rule(verbs("create"), groups(authorizationGroup), "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
				rule(verbs("create"), groups(authenticationGroup), "selfsubjectreviews"),
			},
		},
		{
			// What anyone, even anonymous, may read.
			ObjectMeta: meta("", "system:public-info-viewer"),
			Rules:      []rbacv1.PolicyRule{urls(verbs("get"), "/livez", "/readyz", "/healthz", "/version", "/version/")},
		},
		{
			// Health and metrics scrapers.
			ObjectMeta: meta("", SystemMonitoring),
			Rules: []rbacv1.PolicyRule{urls(verbs("get"),
				"/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz", "/livez/*", "/readyz/*", "/healthz/*")},
		},
		{ObjectMeta: meta("", Admin), AggregationRule: aggregate(AggregateToAdmin)},
		{ObjectMeta: meta("", Edit, AggregateToAdmin, "true"), AggregationRule: aggregate(AggregateToEdit)},
		{ObjectMeta: meta("", View, AggregateToEdit, "true"), AggregationRule: aggregate(AggregateToView)},
		{
			ObjectMeta: meta("", "system:aggregate-to-admin", AggregateToAdmin, "true"),
			Rules: []rbacv1.PolicyRule{
				rule(verbs("create"), groups(authorizationGroup), "localsubjectaccessreviews"),
				rule(readWrite, groups(rbacGroup), "roles", "rolebindings"),
			},
		},
		{
			ObjectMeta: meta("", "system:aggregate-to-edit", AggregateToEdit, "true"),
			Rules: []rbacv1.PolicyRule{
				rule(write, groups(legacyGroup), "pods"),
				rule(write, groups(legacyGroup), "events"),
				rule(write, groups(legacyGroup), "configmaps"),
				rule(readWrite, groups(coordinationGroup), "leases"),
				rule(readWrite, groups(coordinationGroup), "leasecandidates"),
			},
		},
		{
			ObjectMeta: meta("", "system:aggregate-to-view", AggregateToView, "true"),
			Rules: []rbacv1.PolicyRule{
				rule(read, groups(legacyGroup), "pods"),
				rule(read, groups(legacyGroup), "events", "namespaces/status", "pods/status"),
				rule(read, groups(legacyGroup), "configmaps"),
				// Reading namespaces at namespace scope reads that namespace.
				rule(read, groups(legacyGroup), "namespaces"),
				rule(read, groups(coordinationGroup), "leases", "leasecandidates"),
			},
		},
		{
			// Kubelets' powers, for reference and for custom bindings; since
			// Kubernetes 1.8 nodes are authorized by the Node authorizer, and
			// this role is bound to no one.
			ObjectMeta: meta("", SystemNode),
			Rules: []rbacv1.PolicyRule{
				rule(verbs("create"), groups(authorizationGroup), "subjectaccessreviews", "localsubjectaccessreviews"),
				rule(verbs("create", "get", "list", "watch"), groups(legacyGroup), "nodes"),
				rule(verbs("update", "patch"), groups(legacyGroup), "nodes/status"),
				rule(verbs("update", "patch"), groups(legacyGroup), "nodes"),
				rule(verbs("create", "update", "patch"), groups(legacyGroup), "events"),
				rule(read, groups(legacyGroup), "pods"),
				rule(verbs("create", "delete"), groups(legacyGroup), "pods"),
				rule(verbs("update", "patch"), groups(legacyGroup), "pods/status"),
				rule(verbs("get", "create", "update", "patch", "delete"), groups(coordinationGroup), "leases"),
			},
		},
		{
			ObjectMeta: meta("", KubeControllerManager),
			Rules: []rbacv1.PolicyRule{
				eventsRule(),
				// Leader election: create its lease, then only touch its own
				// (serve's controllers elect on ControllerManagerLease).
				rule(verbs("create"), groups(coordinationGroup), "leases"),
				named(verbs("get", "update"), groups(coordinationGroup), []string{"leases"}, "kube-controller-manager", ControllerManagerLease),
				rule(verbs("get"), groups(legacyGroup), "namespaces"),
				rule(verbs("create"), groups(authorizationGroup), "subjectaccessreviews"),
				// Controllers' informers read everything.
				rule(verbs("list", "watch"), groups("*"), "*"),
			},
		},
		{
			ObjectMeta: meta("", KubeScheduler),
			Rules: []rbacv1.PolicyRule{
				eventsRule(),
				rule(verbs("create"), groups(coordinationGroup), "leases"),
				named(verbs("get", "update"), groups(coordinationGroup), []string{"leases"}, "kube-scheduler"),
				rule(read, groups(legacyGroup), "nodes"),
				rule(verbs("delete", "get", "list", "watch"), groups(legacyGroup), "pods"),
				rule(verbs("patch", "update"), groups(legacyGroup), "pods/status"),
				rule(verbs("create"), groups(authorizationGroup), "subjectaccessreviews"),
				rule(read, groups(legacyGroup), "namespaces"),
			},
		},
	}
	return append(roles, controllerRoles()...)
}

// ClusterRoleBindings bind the cluster roles, controllers' included.
func ClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	bindings := []rbacv1.ClusterRoleBinding{
		clusterBinding(ClusterAdmin, groupSubject("system:masters")),
		clusterBinding(SystemMonitoring, groupSubject(MonitoringGroup)),
		clusterBinding("system:discovery", groupSubject("system:authenticated")),
		clusterBinding("system:basic-user", groupSubject("system:authenticated")),
		clusterBinding("system:public-info-viewer", groupSubject("system:authenticated"), groupSubject("system:unauthenticated")),
		// Exists, as upstream's, but binds no one: the Node authorizer
		// authorizes nodes.
		clusterBinding(SystemNode),
		clusterBinding(KubeControllerManager, userSubject(KubeControllerManager)),
		clusterBinding(KubeScheduler, userSubject(KubeScheduler)),
	}
	return append(bindings, controllerRoleBindings()...)
}

// Leader-locking Roles in kube-system.
const (
	LeaderLockingKubeControllerManager = "system::leader-locking-kube-controller-manager"
	LeaderLockingKubeScheduler         = "system::leader-locking-kube-scheduler"
)

// NamespaceRoles are the Roles created in kube-system: what the controller
// manager's and the scheduler's leader election (including coordinated
// election's candidates) need.
func NamespaceRoles() []rbacv1.Role {
	lock := func(name string) rbacv1.Role {
		return rbacv1.Role{
			ObjectMeta: meta(metav1.NamespaceSystem, name),
			Rules: []rbacv1.PolicyRule{
				rule(verbs("get", "watch", "list", "create", "update"), groups(coordinationGroup), "leases", "leasecandidates"),
			},
		}
	}
	return []rbacv1.Role{lock(LeaderLockingKubeControllerManager), lock(LeaderLockingKubeScheduler)}
}

// NamespaceRoleBindings bind the leader-locking Roles as upstream does: the
// controller manager's also to the coordinated leader election controller.
func NamespaceRoleBindings() []rbacv1.RoleBinding {
	bind := func(name string, subjects ...rbacv1.Subject) rbacv1.RoleBinding {
		return rbacv1.RoleBinding{
			ObjectMeta: meta(metav1.NamespaceSystem, name),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacGroup, Kind: "Role", Name: name},
			Subjects:   subjects,
		}
	}
	return []rbacv1.RoleBinding{
		bind(LeaderLockingKubeControllerManager,
			userSubject(KubeControllerManager),
			serviceAccountSubject(metav1.NamespaceSystem, "kube-controller-manager"),
			serviceAccountSubject(metav1.NamespaceSystem, LeaderElectionController)),
		bind(LeaderLockingKubeScheduler,
			userSubject(KubeScheduler),
			serviceAccountSubject(metav1.NamespaceSystem, "kube-scheduler")),
	}
}
