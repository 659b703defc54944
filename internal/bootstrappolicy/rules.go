package bootstrappolicy

import (
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Metadata every bootstrap object carries.
const (
	// BootstrappingLabel marks an object as part of the default policy.
	BootstrappingLabel = "kubernetes.io/bootstrapping"
	// BootstrappingValue is BootstrappingLabel's value.
	BootstrappingValue = "rbac-defaults"
)

// API groups the rules name.
const (
	legacyGroup         = ""
	authenticationGroup = "authentication.k8s.io"
	authorizationGroup  = "authorization.k8s.io"
	coordinationGroup   = "coordination.k8s.io"
	eventsGroup         = "events.k8s.io"
	rbacGroup           = rbacv1.GroupName
)

// Verb sets as upstream names them.
var (
	read      = []string{"get", "list", "watch"}
	write     = []string{"create", "update", "patch", "delete", "deletecollection"}
	readWrite = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
)

// rule is a resource rule; every list is sorted, as upstream's builder does.
func rule(verbs, groups []string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: sorted(verbs), APIGroups: sorted(groups), Resources: sorted(resources)}
}

// named is a resource rule limited to resourceNames.
func named(verbs, groups, resources []string, names ...string) rbacv1.PolicyRule {
	r := rule(verbs, groups, resources...)
	r.ResourceNames = sorted(names)
	return r
}

// urls is a non-resource rule.
func urls(verbs []string, paths ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: sorted(verbs), NonResourceURLs: sorted(paths)}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func verbs(v ...string) []string  { return v }
func groups(g ...string) []string { return g }

// eventsRule lets a component record events in either events API, as
// upstream's controllers' roles do.
func eventsRule() rbacv1.PolicyRule {
	return rule(verbs("create", "update", "patch"), groups(legacyGroup, eventsGroup), "events")
}

// meta is the ObjectMeta of a bootstrap object; extra labels may be given
// as key, value pairs.
func meta(namespace, name string, labels ...string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{
		Namespace:   namespace,
		Name:        name,
		Labels:      map[string]string{BootstrappingLabel: BootstrappingValue},
		Annotations: map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"},
	}
	for i := 0; i+1 < len(labels); i += 2 {
		m.Labels[labels[i]] = labels[i+1]
	}
	return m
}

func clusterRoleRef(name string) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacGroup, Kind: "ClusterRole", Name: name}
}

func groupSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{APIGroup: rbacGroup, Kind: rbacv1.GroupKind, Name: name}
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{APIGroup: rbacGroup, Kind: rbacv1.UserKind, Name: name}
}

func serviceAccountSubject(namespace, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
}

// clusterBinding binds the ClusterRole of the same name to subjects.
func clusterBinding(name string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{ObjectMeta: meta("", name), RoleRef: clusterRoleRef(name), Subjects: subjects}
}
