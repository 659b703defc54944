package kubecluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DelegatingKubeconfig returns a kubeconfig for an aggregated server's own
// calls to kube-apiserver (a client certificate for user from the cluster
// CA) and grants user what such a server needs (aggregation.md §2.3):
// the ClusterRole system:auth-delegator (create TokenReviews and
// SubjectAccessReviews) and the Role
// kube-system/extension-apiserver-authentication-reader (read the ConfigMap
// kube-apiserver publishes its client-CA and request-header settings in).
func (c *Cluster) DelegatingKubeconfig(t testing.TB, user string) string {
	t.Helper()
	kubeconfig := c.UserKubeconfig(t, user)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rbac := c.AdminClientset(t).RbacV1()
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	name := "kubecluster:" + user
	if _, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name + ":auth-delegator"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:auth-delegator"},
		Subjects:   subject,
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("kubecluster: bind %s to system:auth-delegator: %v", user, err)
	}
	if _, err := rbac.RoleBindings("kube-system").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name + ":authentication-reader", Namespace: "kube-system"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "extension-apiserver-authentication-reader"},
		Subjects:   subject,
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("kubecluster: %v", fmt.Errorf("bind %s to kube-system/extension-apiserver-authentication-reader: %w", user, err))
	}
	return kubeconfig
}
