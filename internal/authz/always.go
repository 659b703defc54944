package authz

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/leasehold/leasehold/internal/request"
)

// AlwaysAllow is --authorization-mode AlwaysAllow: every request is allowed,
// and every user holds every rule.
type AlwaysAllow struct{}

// Authorize implements Authorizer.
func (AlwaysAllow) Authorize(context.Context, *request.Attributes) (Decision, string, error) {
	return DecisionAllow, "", nil
}

// RulesFor implements RuleResolver: everything, as kube-apiserver answers.
func (AlwaysAllow) RulesFor(context.Context, request.User, string) authorizationv1.SubjectRulesReviewStatus {
	return authorizationv1.SubjectRulesReviewStatus{
		ResourceRules:    []authorizationv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
		NonResourceRules: []authorizationv1.NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
	}
}

// AlwaysDeny is --authorization-mode AlwaysDeny. Like kube-apiserver's, it
// answers NoOpinion with a reason rather than Deny, so an authorizer after it
// may still allow (and the privileged groups ahead of it always do).
type AlwaysDeny struct{}

// Authorize implements Authorizer.
func (AlwaysDeny) Authorize(context.Context, *request.Attributes) (Decision, string, error) {
	return DecisionNoOpinion, "Everything is forbidden.", nil
}

// RulesFor implements RuleResolver: nothing.
func (AlwaysDeny) RulesFor(context.Context, request.User, string) authorizationv1.SubjectRulesReviewStatus {
	return authorizationv1.SubjectRulesReviewStatus{}
}
