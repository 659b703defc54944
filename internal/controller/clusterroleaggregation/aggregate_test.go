package clusterroleaggregation_test

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/controller/clusterroleaggregation"
)

func role(name string, labels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Rules: rules}
}

func TestRules(t *testing.T) {
	get := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	list := rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	metrics := rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}}
	agg := role("agg", map[string]string{"a": "true"})
	agg.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
		{MatchLabels: map[string]string{"a": "true"}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "b", Operator: metav1.LabelSelectorOpExists}}},
	}}
	all := []*rbacv1.ClusterRole{
		agg, // matches its own selector, but never aggregates itself
		role("z", map[string]string{"a": "true"}, list, get),
		role("m", map[string]string{"a": "true"}, get),
		role("x", map[string]string{"b": ""}, metrics, get),
		role("other", nil, rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}),
	}
	got, err := clusterroleaggregation.Rules(agg, all)
	if err != nil {
		t.Fatal(err)
	}
	// Selector order, then name order; each rule once.
	want := []rbacv1.PolicyRule{get, list, metrics}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("rules %+v, want %+v", got, want)
	}

	agg.AggregationRule.ClusterRoleSelectors[1].MatchExpressions[0].Operator = "Near"
	if _, err := clusterroleaggregation.Rules(agg, all); err == nil {
		t.Error("a bad selector was accepted")
	}
}
