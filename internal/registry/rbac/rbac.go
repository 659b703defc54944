// Package rbac describes the four kinds of rbac.authorization.k8s.io/v1:
// Roles and RoleBindings (namespaced), ClusterRoles and ClusterRoleBindings
// (cluster-scoped), with kube-apiserver's validation messages, defaults and
// table columns.
//
// Invariants: as kube-apiserver's RBAC strategies, every kind may be created
// by PUT and updated without a resourceVersion (kubectl auth reconcile and
// the bootstrap reconciler rely on both); a binding's roleRef never changes
// after creation; names are path segments (so "system:controller:x" is
// valid); the descriptors' functions are pure. Escalation checks are not
// here: they need the caller and live with the authorizer.
package rbac

import (
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/leasehold/leasehold/internal/registry"
)

// Resources returns the descriptors of the four RBAC kinds; now is the clock
// of the AGE column.
func Resources(now func() time.Time) []*registry.Resource {
	return []*registry.Resource{
		ClusterRoleBindingResource(now),
		ClusterRoleResource(),
		RoleBindingResource(now),
		RoleResource(),
	}
}

// base fills what the four kinds share.
func base(resource, singular, kind string, namespaced bool) *registry.Resource {
	return &registry.Resource{
		GroupVersion:             rbacv1.SchemeGroupVersion,
		Resource:                 resource,
		SingularName:             singular,
		Kind:                     kind,
		ListKind:                 kind + "List",
		Namespaced:               namespaced,
		AllowCreateOnUpdate:      true,
		AllowUnconditionalUpdate: true,
		ValidateName:             ValidateName,
	}
}

// RoleResource describes namespaced Roles.
func RoleResource() *registry.Resource {
	r := base("roles", "role", "Role", true)
	r.New = func() runtime.Object { return &rbacv1.Role{} }
	r.NewList = func() runtime.Object { return &rbacv1.RoleList{} }
	r.ValidateCreate = func(obj runtime.Object) field.ErrorList {
		return ValidateRules(obj.(*rbacv1.Role).Rules, true)
	}
	r.ValidateUpdate = func(obj, _ runtime.Object) field.ErrorList {
		return ValidateRules(obj.(*rbacv1.Role).Rules, true)
	}
	r.TableColumns = roleColumns
	r.TableRow = func(obj runtime.Object) []interface{} { return roleRow(&obj.(*rbacv1.Role).ObjectMeta) }
	return r
}

// ClusterRoleResource describes ClusterRoles, including aggregated ones.
func ClusterRoleResource() *registry.Resource {
	r := base("clusterroles", "clusterrole", "ClusterRole", false)
	r.New = func() runtime.Object { return &rbacv1.ClusterRole{} }
	r.NewList = func() runtime.Object { return &rbacv1.ClusterRoleList{} }
	r.ValidateCreate = func(obj runtime.Object) field.ErrorList {
		return ValidateClusterRole(obj.(*rbacv1.ClusterRole))
	}
	r.ValidateUpdate = func(obj, _ runtime.Object) field.ErrorList {
		return ValidateClusterRole(obj.(*rbacv1.ClusterRole))
	}
	r.TableColumns = roleColumns
	r.TableRow = func(obj runtime.Object) []interface{} { return roleRow(&obj.(*rbacv1.ClusterRole).ObjectMeta) }
	return r
}

// RoleBindingResource describes namespaced RoleBindings.
func RoleBindingResource(now func() time.Time) *registry.Resource {
	r := bindingResource("rolebindings", "rolebinding", "RoleBinding", true, now, func(obj runtime.Object) binding {
		b := obj.(*rbacv1.RoleBinding)
		return binding{&b.ObjectMeta, &b.RoleRef, b.Subjects}
	})
	r.New = func() runtime.Object { return &rbacv1.RoleBinding{} }
	r.NewList = func() runtime.Object { return &rbacv1.RoleBindingList{} }
	return r
}

// ClusterRoleBindingResource describes ClusterRoleBindings.
func ClusterRoleBindingResource(now func() time.Time) *registry.Resource {
	r := bindingResource("clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", false, now, func(obj runtime.Object) binding {
		b := obj.(*rbacv1.ClusterRoleBinding)
		return binding{&b.ObjectMeta, &b.RoleRef, b.Subjects}
	})
	r.New = func() runtime.Object { return &rbacv1.ClusterRoleBinding{} }
	r.NewList = func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} }
	return r
}

// binding is what the two binding kinds share, pointing into one object.
type binding struct {
	meta     *metav1.ObjectMeta
	ref      *rbacv1.RoleRef
	subjects []rbacv1.Subject
}

// bindingResource fills the defaulting, validation and table of a binding
// kind; parts views one of its objects as a binding.
func bindingResource(resource, singular, kind string, namespaced bool, now func() time.Time, parts func(runtime.Object) binding) *registry.Resource {
	r := base(resource, singular, kind, namespaced)
	r.PrepareForCreate = func(obj runtime.Object) {
		b := parts(obj)
		DefaultBinding(b.ref, b.subjects)
	}
	r.PrepareForUpdate = func(obj, _ runtime.Object, _ string) {
		b := parts(obj)
		DefaultBinding(b.ref, b.subjects)
	}
	r.ValidateCreate = func(obj runtime.Object) field.ErrorList {
		b := parts(obj)
		return ValidateBinding(*b.ref, b.subjects, namespaced)
	}
	r.ValidateUpdate = func(obj, old runtime.Object) field.ErrorList {
		b := parts(obj)
		return append(ValidateBinding(*b.ref, b.subjects, namespaced), ValidateRoleRefUpdate(*b.ref, *parts(old).ref)...)
	}
	r.TableColumns = bindingColumns(strings.ToLower(kind[:1]) + kind[1:])
	r.TableRow = func(obj runtime.Object) []interface{} {
		b := parts(obj)
		return bindingRow(b.meta, *b.ref, b.subjects, now())
	}
	return r
}
