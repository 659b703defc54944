package authz

import (
	"context"
	"errors"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/leasehold/leasehold/internal/request"
)

// Union asks each authorizer in order and returns the first Allow or Deny,
// with that authorizer's own reason and error. When every authorizer has no
// opinion, the request is refused with their non-empty reasons joined by
// "\n" and their errors aggregated, as kube-apiserver's union authorizer
// does: the Forbidden message then carries every reason that was given.
type Union []Authorizer

// Authorize implements Authorizer.
func (u Union) Authorize(ctx context.Context, a *request.Attributes) (Decision, string, error) {
	var (
		errs    []error
		reasons []string
	)
	for _, authorizer := range u {
		decision, reason, err := authorizer.Authorize(ctx, a)
		if err != nil {
			errs = append(errs, err)
		}
		// An authorizer that asks another server (the cluster's
		// SubjectAccessReview) may give the same reason as a local one.
		if reason != "" && !slices.Contains(reasons, reason) {
			reasons = append(reasons, reason)
		}
		if decision == DecisionAllow || decision == DecisionDeny {
			return decision, reason, err
		}
	}
	return DecisionNoOpinion, strings.Join(reasons, "\n"), utilerrors.NewAggregate(errs)
}

// UnionRules lists the rules of every resolver together, as kube-apiserver's
// union rule resolver does: the lists are concatenated, the result is
// incomplete if any part is, and the evaluation errors are aggregated into
// one message.
type UnionRules []RuleResolver

// RulesFor implements RuleResolver.
func (u UnionRules) RulesFor(ctx context.Context, user request.User, namespace string) authorizationv1.SubjectRulesReviewStatus {
	var (
		status authorizationv1.SubjectRulesReviewStatus
		errs   []error
	)
	for _, resolver := range u {
		part := resolver.RulesFor(ctx, user, namespace)
		status.ResourceRules = append(status.ResourceRules, part.ResourceRules...)
		status.NonResourceRules = append(status.NonResourceRules, part.NonResourceRules...)
		status.Incomplete = status.Incomplete || part.Incomplete
		if part.EvaluationError != "" {
			errs = append(errs, errors.New(part.EvaluationError))
		}
	}
	if agg := utilerrors.NewAggregate(errs); agg != nil {
		status.EvaluationError = agg.Error()
	}
	return status
}
