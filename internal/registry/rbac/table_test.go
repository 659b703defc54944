package rbac_test

import (
	"slices"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/registry/rbac"
)

func TestBindingRow(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := func() time.Time { return created.Add(90 * time.Minute) }
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "ops", CreationTimestamp: metav1.NewTime(created)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{
			{Kind: "User", Name: "alice"}, {Kind: "User", Name: "bob"},
			{Kind: "Group", Name: "ops"},
			{Kind: "ServiceAccount", Namespace: "kube-system", Name: "gc"},
		},
	}
	res := rbac.ClusterRoleBindingResource(now)
	var names []string
	for _, c := range res.TableColumns {
		names = append(names, c.Name)
	}
	if want := []string{"Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"}; !slices.Equal(names, want) {
		t.Errorf("columns %v, want %v", names, want)
	}
	got := res.TableRow(b)
	want := []interface{}{"ops", "ClusterRole/cluster-admin", "90m", "alice, bob", "ops", "kube-system/gc"}
	if !slices.Equal(got, want) {
		t.Errorf("row %v, want %v", got, want)
	}
}

func TestRoleRow(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	r := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader", CreationTimestamp: metav1.NewTime(created)}}
	res := rbac.RoleResource()
	if len(res.TableColumns) != 2 || res.TableColumns[1].Name != "Created At" || res.TableColumns[1].Type != "date" {
		t.Errorf("columns %+v", res.TableColumns)
	}
	if got := res.TableRow(r); !slices.Equal(got, []interface{}{"reader", "2026-01-02T02:04:05Z"}) {
		t.Errorf("row %v", got)
	}
}
