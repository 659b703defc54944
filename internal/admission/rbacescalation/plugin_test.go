package rbacescalation

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/admission"
	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/authz/rbac"
	"github.com/leasehold/leasehold/internal/request"
)

var leases = []string{"coordination.k8s.io"}

func rule(verbs, groups, resources []string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources}
}

func ref(kind, name string) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}
}

func subject(kind, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: kind, APIGroup: rbacv1.GroupName, Name: name}
}

func objMeta(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }

// policy: bob reads and writes leases everywhere and deletes them in apps;
// escalator may escalate roles in apps and clusterroles; binder may bind
// ClusterRole edit-all in apps; root is bound to cluster-admin (without
// being in system:masters); carol has a binding to a missing Role.
func policy() *rbac.Policy {
	return rbac.NewPolicy(rbac.Objects{
		ClusterRoles: []*rbacv1.ClusterRole{
			{ObjectMeta: objMeta("", "lease-writer"), Rules: []rbacv1.PolicyRule{rule([]string{"get", "list", "watch", "create", "update"}, leases, []string{"leases"})}},
			{ObjectMeta: objMeta("", "cluster-admin"), Rules: []rbacv1.PolicyRule{rule([]string{"*"}, []string{"*"}, []string{"*"}), {Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}},
			{ObjectMeta: objMeta("", "edit-all"), Rules: []rbacv1.PolicyRule{rule([]string{"*"}, []string{"*"}, []string{"*"})}},
			{ObjectMeta: objMeta("", "escalate-clusterroles"), Rules: []rbacv1.PolicyRule{rule([]string{"escalate"}, []string{rbacv1.GroupName}, []string{"clusterroles"})}},
			{ObjectMeta: objMeta("", "delete-leases"), Rules: []rbacv1.PolicyRule{rule([]string{"delete"}, leases, []string{"leases"})}},
		},
		Roles: []*rbacv1.Role{
			{ObjectMeta: objMeta("apps", "lease-deleter"), Rules: []rbacv1.PolicyRule{rule([]string{"delete"}, leases, []string{"leases"})}},
			{ObjectMeta: objMeta("apps", "escalate-roles"), Rules: []rbacv1.PolicyRule{rule([]string{"escalate"}, []string{rbacv1.GroupName}, []string{"roles"})}},
			{ObjectMeta: objMeta("apps", "bind-edit-all"), Rules: []rbacv1.PolicyRule{{Verbs: []string{"bind"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, ResourceNames: []string{"edit-all"}}}},
		},
		ClusterRoleBindings: []*rbacv1.ClusterRoleBinding{
			{ObjectMeta: objMeta("", "bob-leases"), RoleRef: ref("ClusterRole", "lease-writer"), Subjects: []rbacv1.Subject{subject(rbacv1.UserKind, "bob")}},
			{ObjectMeta: objMeta("", "root"), RoleRef: ref("ClusterRole", "cluster-admin"), Subjects: []rbacv1.Subject{subject(rbacv1.UserKind, "root")}},
			{ObjectMeta: objMeta("", "escalator"), RoleRef: ref("ClusterRole", "escalate-clusterroles"), Subjects: []rbacv1.Subject{subject(rbacv1.UserKind, "escalator")}},
		},
		RoleBindings: []*rbacv1.RoleBinding{
			{ObjectMeta: objMeta("apps", "bob-deletes"), RoleRef: ref("Role", "lease-deleter"), Subjects: []rbacv1.Subject{subject(rbacv1.UserKind, "bob")}},
			{ObjectMeta: objMeta("apps", "escalator"), RoleRef: ref("Role", "escalate-roles"), Subjects: []rbacv1.Subject{subject(rbacv1.UserKind, "escalator")}},
			{ObjectMeta: objMeta("apps", "binder"), RoleRef: ref("Role", "bind-edit-all"), Subjects: []rbacv1.Subject{subject(rbacv1.UserKind, "binder")}},
			{ObjectMeta: objMeta("apps", "carol"), RoleRef: ref("Role", "missing"), Subjects: []rbacv1.Subject{subject(rbacv1.UserKind, "carol")}},
		},
	})
}

func newPlugin() *Plugin {
	p := policy()
	return New(rbac.NewAuthorizer(p), p, nil)
}

func attrs(userName string, op admission.Operation, resource, ns string, obj, old runtime.Object) *admission.Attributes {
	u := request.User{Name: userName, Groups: []string{request.AllAuthenticated}}
	if userName == "" {
		u = request.User{}
	}
	name := ""
	if op == admission.Update {
		name = obj.(metav1.Object).GetName()
	}
	return &admission.Attributes{
		Attributes: &request.Attributes{User: u, ResourceRequest: true, Verb: map[admission.Operation]string{admission.Create: "create", admission.Update: "update"}[op],
			APIGroup: rbacv1.GroupName, APIVersion: "v1", Namespace: ns, Resource: resource, Name: name},
		Operation: op, Object: obj, OldObject: old,
	}
}

func roleObj(ns, name string, rules ...rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{ObjectMeta: objMeta(ns, name), Rules: rules}
}

func clusterRoleObj(name string, agg bool, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	r := &rbacv1.ClusterRole{ObjectMeta: objMeta("", name), Rules: rules}
	if agg {
		r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"a": "b"}}}}
	}
	return r
}

func roleBindingObj(ns, name string, r rbacv1.RoleRef) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: objMeta(ns, name), RoleRef: r, Subjects: []rbacv1.Subject{subject(rbacv1.UserKind, "someone")}}
}

func clusterRoleBindingObj(name string, r rbacv1.RoleRef) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{ObjectMeta: objMeta("", name), RoleRef: r, Subjects: []rbacv1.Subject{subject(rbacv1.UserKind, "someone")}}
}

const held = ` (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n"

func TestAdmit(t *testing.T) {
	deleteLeases := rule([]string{"delete"}, leases, []string{"leases"})
	getLeases := rule([]string{"get"}, leases, []string{"leases"})
	mixed := []rbacv1.PolicyRule{
		{Verbs: []string{"get", "patch"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"a", "b"}},
		{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics", "/debug/*"}},
		{Verbs: []string{"delete", "get", "deletecollection"}, APIGroups: leases, Resources: []string{"leases"}},
	}
	masters := attrs("admin", admission.Create, "clusterroles", "", clusterRoleObj("x", true, mixed...), nil)
	masters.User.Groups = []string{request.SystemPrivilegedGroup}
	gcOld := roleBindingObj("apps", "rb", ref("ClusterRole", "cluster-admin"))
	gcNew := gcOld.DeepCopy()
	gcNew.Finalizers = []string{"x"}
	gcNew.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Namespace", Name: "apps", UID: "u"}}
	gcNew.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "gc"}}
	labelled := gcNew.DeepCopy()
	labelled.Labels = map[string]string{"x": "y"}
	aggOld := clusterRoleObj("agg", true)
	aggOld.ResourceVersion = "5"
	aggGC := aggOld.DeepCopy()
	aggGC.Finalizers = []string{"f"}
	aggPlain := clusterRoleObj("agg", false)
	aggPlain.ResourceVersion = "5"

	cases := []struct {
		name string
		a    *admission.Attributes
		want string // "" admits
	}{
		{"system:masters may grant anything", masters, ""},
		{"no user", attrs("", admission.Create, "roles", "apps", roleObj("apps", "r", getLeases), nil),
			`roles.rbac.authorization.k8s.io "r" is forbidden: no user on context`},
		{"rules held cluster wide and in the namespace", attrs("bob", admission.Create, "roles", "apps", roleObj("apps", "r", getLeases, deleteLeases), nil), ""},
		{"rule held only in another namespace", attrs("bob", admission.Create, "roles", "kube-system", roleObj("kube-system", "r", getLeases, deleteLeases), nil),
			`roles.rbac.authorization.k8s.io "r" is forbidden: user "bob"` + held + `{APIGroups:["coordination.k8s.io"], Resources:["leases"], Verbs:["delete"]}`},
		{"namespace rules do not count for a ClusterRole", attrs("bob", admission.Create, "clusterroles", "", clusterRoleObj("cr", false, deleteLeases), nil),
			`clusterroles.rbac.authorization.k8s.io "cr" is forbidden: user "bob"` + held + `{APIGroups:["coordination.k8s.io"], Resources:["leases"], Verbs:["delete"]}`},
		{"every missing rule, compacted and sorted", attrs("bob", admission.Update, "clusterroles", "", clusterRoleObj("cr", false, mixed...), clusterRoleObj("cr", false)),
			`clusterroles.rbac.authorization.k8s.io "cr" is forbidden: user "bob"` + held +
				`{APIGroups:[""], Resources:["pods"], ResourceNames:["a"], Verbs:["get" "patch"]}` + "\n" +
				`{APIGroups:[""], Resources:["pods"], ResourceNames:["b"], Verbs:["get" "patch"]}` + "\n" +
				`{APIGroups:["coordination.k8s.io"], Resources:["leases"], Verbs:["delete" "deletecollection"]}` + "\n" +
				`{NonResourceURLs:["/debug/*"], Verbs:["get"]}` + "\n" +
				`{NonResourceURLs:["/metrics"], Verbs:["get"]}`},
		{"resolution errors follow", attrs("carol", admission.Create, "roles", "apps", roleObj("apps", "r", getLeases), nil),
			`roles.rbac.authorization.k8s.io "r" is forbidden: user "carol"` + held + `{APIGroups:["coordination.k8s.io"], Resources:["leases"], Verbs:["get"]}` +
				`; resolution errors: [roles.rbac.authorization.k8s.io "missing" not found]`},
		{"escalate on roles in the namespace", attrs("escalator", admission.Create, "roles", "apps", roleObj("apps", "r", mixed[0]), nil), ""},
		{"escalate on roles is per namespace", attrs("escalator", admission.Create, "roles", "kube-system", roleObj("kube-system", "r", getLeases), nil),
			`roles.rbac.authorization.k8s.io "r" is forbidden: user "escalator"` + held + `{APIGroups:["coordination.k8s.io"], Resources:["leases"], Verbs:["get"]}`},
		{"escalate on clusterroles, even with an aggregationRule", attrs("escalator", admission.Create, "clusterroles", "", clusterRoleObj("cr", true, mixed...), nil), ""},
		{"aggregationRule needs cluster-admin", attrs("bob", admission.Create, "clusterroles", "", clusterRoleObj("agg", true), nil),
			`clusterroles.rbac.authorization.k8s.io "agg" is forbidden: must have cluster-admin privileges to use the aggregationRule`},
		{"rules are checked before the aggregationRule", attrs("bob", admission.Create, "clusterroles", "", clusterRoleObj("agg", true, deleteLeases), nil),
			`clusterroles.rbac.authorization.k8s.io "agg" is forbidden: user "bob"` + held + `{APIGroups:["coordination.k8s.io"], Resources:["leases"], Verbs:["delete"]}`},
		{"removing an aggregationRule needs cluster-admin", attrs("bob", admission.Update, "clusterroles", "", aggPlain, aggOld),
			`clusterroles.rbac.authorization.k8s.io "agg" is forbidden: must have cluster-admin privileges to use the aggregationRule`},
		{"cluster-admin by binding may aggregate", attrs("root", admission.Create, "clusterroles", "", clusterRoleObj("agg", true), nil), ""},
		{"a GC-only update of an aggregated role", attrs("bob", admission.Update, "clusterroles", "", aggGC, aggOld), ""},
		{"bind the named ClusterRole in the namespace", attrs("binder", admission.Create, "rolebindings", "apps", roleBindingObj("apps", "rb", ref("ClusterRole", "edit-all")), nil), ""},
		{"bind is per namespace", attrs("binder", admission.Create, "rolebindings", "kube-system", roleBindingObj("kube-system", "rb", ref("ClusterRole", "edit-all")), nil),
			`rolebindings.rbac.authorization.k8s.io "rb" is forbidden: user "binder"` + held + `{APIGroups:["*"], Resources:["*"], Verbs:["*"]}`},
		{"bind is per role name", attrs("binder", admission.Create, "rolebindings", "apps", roleBindingObj("apps", "rb", ref("ClusterRole", "delete-leases")), nil),
			`rolebindings.rbac.authorization.k8s.io "rb" is forbidden: user "binder"` + held + `{APIGroups:["coordination.k8s.io"], Resources:["leases"], Verbs:["delete"]}`},
		{"a namespaced bind does not allow a ClusterRoleBinding", attrs("binder", admission.Create, "clusterrolebindings", "", clusterRoleBindingObj("crb", ref("ClusterRole", "edit-all")), nil),
			`clusterrolebindings.rbac.authorization.k8s.io "crb" is forbidden: user "binder"` + held + `{APIGroups:["*"], Resources:["*"], Verbs:["*"]}`},
		{"binding a Role whose rules are held", attrs("bob", admission.Create, "rolebindings", "apps", roleBindingObj("apps", "rb", ref("Role", "lease-deleter")), nil), ""},
		{"binding a ClusterRole in a namespace where its rules are held", attrs("bob", admission.Create, "rolebindings", "apps", roleBindingObj("apps", "rb", ref("ClusterRole", "delete-leases")), nil), ""},
		{"binding it cluster wide", attrs("bob", admission.Create, "clusterrolebindings", "", clusterRoleBindingObj("crb", ref("ClusterRole", "delete-leases")), nil),
			`clusterrolebindings.rbac.authorization.k8s.io "crb" is forbidden: user "bob"` + held + `{APIGroups:["coordination.k8s.io"], Resources:["leases"], Verbs:["delete"]}`},
		{"binding a missing role", attrs("bob", admission.Create, "clusterrolebindings", "", clusterRoleBindingObj("crb", ref("ClusterRole", "missing")), nil),
			`clusterroles.rbac.authorization.k8s.io "missing" not found`},
		{"GC-only update of a binding", attrs("bob", admission.Update, "rolebindings", "apps", gcNew, gcOld), ""},
		{"any other change of a binding", attrs("bob", admission.Update, "rolebindings", "apps", labelled, gcOld),
			`rolebindings.rbac.authorization.k8s.io "rb" is forbidden: user "bob"` + held + `{APIGroups:["*"], Resources:["*"], Verbs:["*"]}` + "\n" + `{NonResourceURLs:["*"], Verbs:["*"]}`},
		{"a RoleBinding needs a namespace", attrs("bob", admission.Create, "rolebindings", "", roleBindingObj("", "rb", ref("Role", "x")), nil), "namespace is required"},
		{"not an RBAC object", attrs("bob", admission.Create, "roles", "apps", clusterRoleObj("x", false), nil), "rbac escalation check: *v1.ClusterRole is not a roles object"},
	}
	p := newPlugin()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := p.Admit(context.Background(), c.a)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && err == nil:
				t.Fatalf("admitted, want %q", c.want)
			case c.want != "" && err.Error() != c.want:
				t.Fatalf("error\n%s\nwant\n%s", err, c.want)
			}
		})
	}
}

// Refusals are Forbidden Status errors naming the object; a binding to a
// missing role is NotFound.
func TestAdmitStatus(t *testing.T) {
	p := newPlugin()
	err := p.Admit(context.Background(), attrs("bob", admission.Create, "clusterrolebindings", "", clusterRoleBindingObj("crb", ref("ClusterRole", "delete-leases")), nil))
	var st apierrors.APIStatus
	if !errors.As(err, &st) || !apierrors.IsForbidden(err) {
		t.Fatalf("not Forbidden: %v", err)
	}
	if d := st.Status().Details; d == nil || d.Group != rbacv1.GroupName || d.Kind != "clusterrolebindings" || d.Name != "crb" || st.Status().Code != 403 {
		t.Errorf("status %+v", st.Status())
	}
	err = p.Admit(context.Background(), attrs("bob", admission.Create, "rolebindings", "apps", roleBindingObj("apps", "rb", ref("Role", "missing")), nil))
	if !apierrors.IsNotFound(err) || err.Error() != `roles.rbac.authorization.k8s.io "missing" not found` {
		t.Errorf("binding a missing Role: %v", err)
	}
}

// Deletes, other resources and subresources are not this check's.
func TestAdmitIgnores(t *testing.T) {
	p := newPlugin()
	grant := clusterRoleObj("cr", true, rule([]string{"*"}, []string{"*"}, []string{"*"}))
	del := attrs("bob", admission.Create, "clusterroles", "", grant, nil)
	del.Operation = admission.Delete
	other := attrs("bob", admission.Create, "leases", "", grant, nil)
	otherGroup := attrs("bob", admission.Create, "clusterroles", "", grant, nil)
	otherGroup.APIGroup = "example.com"
	sub := attrs("bob", admission.Create, "clusterroles", "", grant, nil)
	sub.Subresource = "status"
	for name, a := range map[string]*admission.Attributes{"delete": del, "other resource": other, "other group": otherGroup, "subresource": sub} {
		if err := p.Admit(context.Background(), a); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// An authorizer error counts as no permission, not as a failure.
func TestAuthorizerErrorIsNo(t *testing.T) {
	pol := policy()
	p := New(failing{}, pol, slog.New(slog.NewTextHandler(io.Discard, nil)))
	err := p.Admit(context.Background(), attrs("binder", admission.Create, "rolebindings", "apps", roleBindingObj("apps", "rb", ref("ClusterRole", "edit-all")), nil))
	if !apierrors.IsForbidden(err) {
		t.Errorf("got %v, want Forbidden", err)
	}
}

type failing struct{}

func (failing) Authorize(context.Context, *request.Attributes) (authz.Decision, string, error) {
	return authz.DecisionNoOpinion, "", errors.New("boom")
}
