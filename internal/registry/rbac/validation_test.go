package rbac_test

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/leasehold/leasehold/internal/registry/rbac"
)

func messages(errs field.ErrorList) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

func wantMessages(t *testing.T, what string, errs field.ErrorList, want ...string) {
	t.Helper()
	got := messages(errs)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\ngot  %q\nwant %q", what, got, want)
	}
}

// TestValidateRules checks kube-apiserver's rule messages, word for word.
func TestValidateRules(t *testing.T) {
	wantMessages(t, "no verbs, no groups, no resources", rbac.ValidateRules([]rbacv1.PolicyRule{{}}, true),
		"rules[0].verbs: Required value: verbs must contain at least one value",
		"rules[0].apiGroups: Required value: resource rules must supply at least one api group",
		"rules[0].resources: Required value: resource rules must supply at least one resource",
	)
	wantMessages(t, "non-resource URL in a Role",
		rbac.ValidateRules([]rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}, Resources: []string{"pods"}}}, true),
		`rules[0].nonResourceURLs: Invalid value: ["/metrics"]: namespaced rules cannot apply to non-resource URLs`,
		`rules[0].nonResourceURLs: Invalid value: ["/metrics"]: rules cannot apply to both regular resources and non-resource URLs`,
	)
	wantMessages(t, "non-resource URL in a ClusterRole",
		rbac.ValidateRules([]rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}}}, false))
}

func TestValidateClusterRoleAggregation(t *testing.T) {
	role := &rbacv1.ClusterRole{AggregationRule: &rbacv1.AggregationRule{}}
	wantMessages(t, "empty aggregation rule", rbac.ValidateClusterRole(role),
		"aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil")
	role.AggregationRule.ClusterRoleSelectors = []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}}
	errs := rbac.ValidateClusterRole(role)
	if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), `aggregationRule.clusterRoleSelectors[0].matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator`) {
		t.Errorf("bad operator: %v", errs)
	}
}

func TestValidateBinding(t *testing.T) {
	wantMessages(t, "empty ClusterRoleBinding", rbac.ValidateBinding(rbacv1.RoleRef{}, nil, false),
		`roleRef.apiGroup: Unsupported value: "": supported values: "rbac.authorization.k8s.io"`,
		`roleRef.kind: Unsupported value: "": supported values: "ClusterRole"`,
		`roleRef.name: Required value`,
	)
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "a/b"}
	wantMessages(t, "Role in a ClusterRoleBinding, bad name", rbac.ValidateBinding(ref, nil, false),
		`roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"`,
		`roleRef.name: Invalid value: "a/b": may not contain '/'`,
	)
	subjects := []rbacv1.Subject{
		{Kind: "ServiceAccount", Name: "Bad_Name", APIGroup: "rbac.authorization.k8s.io"},
		{Kind: "User", Name: "alice"},
		{Kind: "Robot", Name: "r2"},
		{Kind: "Group"},
	}
	ref.Name = "reader"
	wantMessages(t, "subjects of a ClusterRoleBinding", rbac.ValidateBinding(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "x"}, subjects, false),
		`subjects[0].name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		`subjects[0].apiGroup: Unsupported value: "rbac.authorization.k8s.io": supported values: ""`,
		`subjects[0].namespace: Required value`,
		`subjects[1].apiGroup: Unsupported value: "": supported values: "rbac.authorization.k8s.io"`,
		`subjects[2].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"`,
		`subjects[3].name: Required value`,
		`subjects[3].apiGroup: Unsupported value: "": supported values: "rbac.authorization.k8s.io"`,
	)
	// A RoleBinding may name a Role, and its service accounts default to
	// the binding's namespace.
	wantMessages(t, "RoleBinding", rbac.ValidateBinding(ref, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default"}}, true))
}

func TestValidateRoleRefUpdate(t *testing.T) {
	a := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}
	b := a
	b.Name = "edit"
	wantMessages(t, "changed roleRef", rbac.ValidateRoleRefUpdate(b, a),
		`roleRef: Invalid value: {"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"}: cannot change roleRef`)
	wantMessages(t, "same roleRef", rbac.ValidateRoleRefUpdate(a, a))
}

func TestDefaultBinding(t *testing.T) {
	ref := rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}
	subjects := []rbacv1.Subject{{Kind: "User", Name: "u"}, {Kind: "Group", Name: "g"}, {Kind: "ServiceAccount", Name: "s", Namespace: "n"}}
	rbac.DefaultBinding(&ref, subjects)
	if ref.APIGroup != rbacv1.GroupName || subjects[0].APIGroup != rbacv1.GroupName || subjects[1].APIGroup != rbacv1.GroupName || subjects[2].APIGroup != "" {
		t.Errorf("defaults: %+v %+v", ref, subjects)
	}
}
