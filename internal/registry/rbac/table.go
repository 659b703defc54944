package rbac

import (
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/registry"
)

// roleColumns are kube-apiserver's default table columns, which Roles and
// ClusterRoles use (they have no printer of their own): NAME and CREATED AT.
var roleColumns = []metav1.TableColumnDefinition{
	registry.NameColumn,
	{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
}

func roleRow(m *metav1.ObjectMeta) []interface{} {
	return []interface{}{m.Name, m.CreationTimestamp.UTC().Format(time.RFC3339)}
}

// bindingColumns are kube-apiserver's binding printer columns; the wide
// (priority 1) ones list the subjects by kind. what is "roleBinding" or
// "clusterRoleBinding", as in upstream's descriptions.
func bindingColumns(what string) []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		registry.NameColumn,
		{Name: "Role", Type: "string", Description: rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]},
		registry.AgeColumn,
		{Name: "Users", Type: "string", Priority: 1, Description: "Users in the " + what},
		{Name: "Groups", Type: "string", Priority: 1, Description: "Groups in the " + what},
		{Name: "ServiceAccounts", Type: "string", Priority: 1, Description: "ServiceAccounts in the " + what},
	}
}

func bindingRow(m *metav1.ObjectMeta, ref rbacv1.RoleRef, subjects []rbacv1.Subject, now time.Time) []interface{} {
	users, groups, sas := SubjectStrings(subjects)
	return []interface{}{
		m.Name,
		ref.Kind + "/" + ref.Name,
		registry.Age(m.CreationTimestamp, now),
		strings.Join(users, ", "),
		strings.Join(groups, ", "),
		strings.Join(sas, ", "),
	}
}

// SubjectStrings splits subjects by kind as kubectl shows them: user and
// group names, and service accounts as namespace/name (or name without a namespace). Subjects of other
// kinds are not shown.
func SubjectStrings(subjects []rbacv1.Subject) (users, groups, serviceAccounts []string) {
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			if s.Namespace == "" {
				serviceAccounts = append(serviceAccounts, s.Name)
				continue
			}
			serviceAccounts = append(serviceAccounts, s.Namespace+"/"+s.Name)
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		}
	}
	return users, groups, serviceAccounts
}
