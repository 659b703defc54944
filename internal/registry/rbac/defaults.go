package rbac

import rbacv1 "k8s.io/api/rbac/v1"

// DefaultBinding applies rbac/v1's defaults in place, as kube-apiserver's
// defaulting does before validation: an empty roleRef.apiGroup and the
// apiGroup of User and Group subjects become rbac.authorization.k8s.io
// (ServiceAccount subjects belong to the core group, "").
func DefaultBinding(ref *rbacv1.RoleRef, subjects []rbacv1.Subject) {
	if ref.APIGroup == "" {
		ref.APIGroup = rbacv1.GroupName
	}
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}
