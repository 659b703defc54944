package rbac

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/request"
)

// RulesReviewer lists a user's RBAC rules for SelfSubjectRulesReview
// (kubectl auth can-i --list). Build it with NewRulesReviewer.
type RulesReviewer struct {
	resolver *Resolver
}

var _ authz.RuleResolver = (*RulesReviewer)(nil)

// NewRulesReviewer returns the reviewer over src's current Policy.
func NewRulesReviewer(src Source) *RulesReviewer {
	return &RulesReviewer{resolver: NewResolver(src, ListerNotFound)}
}

// RulesFor implements authz.RuleResolver as Kubernetes' RBAC RulesFor and
// the SelfSubjectRulesReview handler together: each rule with resources is
// a resource rule, each with nonResourceURLs a non-resource rule (a rule
// with both is listed as both); role resolution errors become
// EvaluationError, and the list is never marked Incomplete (RBAC knows all
// it grants).
func (v *RulesReviewer) RulesFor(_ context.Context, u request.User, namespace string) authorizationv1.SubjectRulesReviewStatus {
	rules, err := v.resolver.RulesFor(u, namespace)
	// Empty lists, not null, as Kubernetes' handler writes them.
	st := authorizationv1.SubjectRulesReviewStatus{
		ResourceRules:    []authorizationv1.ResourceRule{},
		NonResourceRules: []authorizationv1.NonResourceRule{},
	}
	for _, r := range rules {
		if len(r.Resources) > 0 {
			st.ResourceRules = append(st.ResourceRules, authorizationv1.ResourceRule{
				Verbs:         r.Verbs,
				APIGroups:     r.APIGroups,
				Resources:     r.Resources,
				ResourceNames: r.ResourceNames,
			})
		}
		if len(r.NonResourceURLs) > 0 {
			st.NonResourceRules = append(st.NonResourceRules, authorizationv1.NonResourceRule{
				Verbs:           r.Verbs,
				NonResourceURLs: r.NonResourceURLs,
			})
		}
	}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st
}
