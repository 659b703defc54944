package clusterroleaggregation

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Rules returns the rules an aggregated ClusterRole should hold: the union
// of the rules of every other ClusterRole in all that one of its selectors
// matches, in selector order and, per selector, role name order (as
// kube-controller-manager's aggregation controller, so the result is
// stable), each distinct rule once. A selector that does not parse is an
// error; the role is then left as it is.
func Rules(role *rbacv1.ClusterRole, all []*rbacv1.ClusterRole) ([]rbacv1.PolicyRule, error) {
	byName := slices.Clone(all)
	slices.SortFunc(byName, func(a, b *rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
	var out []rbacv1.PolicyRule
	for i := range role.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, fmt.Errorf("clusterRoleSelectors[%d] of %s: %w", i, role.Name, err)
		}
		for _, other := range byName {
			if other.Name == role.Name || !sel.Matches(labels.Set(other.Labels)) {
				continue
			}
			for _, r := range other.Rules {
				if !containsRule(out, r) {
					out = append(out, *r.DeepCopy())
				}
			}
		}
	}
	return out, nil
}

func containsRule(rules []rbacv1.PolicyRule, r rbacv1.PolicyRule) bool {
	for _, have := range rules {
		if equality.Semantic.DeepEqual(have, r) {
			return true
		}
	}
	return false
}
