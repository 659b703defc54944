package clusterroleaggregation_test

import (
	"context"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/internal/server/servertest"
)

// waitRules waits until the named ClusterRole holds exactly want.
func waitRules(t *testing.T, c kubernetes.Interface, name string, want []rbacv1.PolicyRule) {
	t.Helper()
	var last []rbacv1.PolicyRule
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		r, err := c.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = r.Rules
		return equality.Semantic.DeepEqual(r.Rules, want), nil
	})
	if err != nil {
		t.Fatalf("%s rules %+v, want %+v: %v", name, last, want, err)
	}
}

// TestAggregation runs the controller inside a real server: an aggregated
// role follows the roles its selector matches as they are created,
// changed, relabelled and deleted, and its own rule edits are undone.
func TestAggregation(t *testing.T) {
	srv := servertest.Start(t)
	ctx := context.Background()
	crs := srv.Client.RbacV1().ClusterRoles()
	create := func(r *rbacv1.ClusterRole) {
		t.Helper()
		if _, err := crs.Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	readLeases := rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}}
	readNodes := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"nodes"}}

	create(&rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "monitoring"},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{"example.com/aggregate-to-monitoring": "true"}},
		}},
	})
	create(&rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "lease-reader", Labels: map[string]string{"example.com/aggregate-to-monitoring": "true"}},
		Rules:      []rbacv1.PolicyRule{readLeases},
	})
	waitRules(t, srv.Client, "monitoring", []rbacv1.PolicyRule{readLeases})

	create(&rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "node-reader", Labels: map[string]string{"example.com/aggregate-to-monitoring": "true"}},
		Rules:      []rbacv1.PolicyRule{readNodes},
	})
	waitRules(t, srv.Client, "monitoring", []rbacv1.PolicyRule{readLeases, readNodes})

	// An edit of the aggregated role's rules is overwritten.
	mon, err := crs.Get(ctx, "monitoring", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mon.Rules = nil
	if _, err := crs.Update(ctx, mon, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRules(t, srv.Client, "monitoring", []rbacv1.PolicyRule{readLeases, readNodes})

	// Relabelling a role out of the selection removes its rules.
	nr, err := crs.Get(ctx, "node-reader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nr.Labels = nil
	if _, err := crs.Update(ctx, nr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRules(t, srv.Client, "monitoring", []rbacv1.PolicyRule{readLeases})

	if err := crs.Delete(ctx, "lease-reader", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRules(t, srv.Client, "monitoring", nil)
}
