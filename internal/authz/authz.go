// Package authz decides whether an authenticated caller may do what a request
// asks, as kube-apiserver's authorization does: an ordered chain of
// authorizers (--authorization-mode), the first Allow or Deny wins.
package authz

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/leasehold/leasehold/internal/request"
)

// Decision is an authorizer's answer.
type Decision int

const (
	// DecisionNoOpinion lets the next authorizer decide.
	DecisionNoOpinion Decision = iota
	// DecisionAllow authorizes the request.
	DecisionAllow
	// DecisionDeny refuses it; no later authorizer is asked.
	DecisionDeny
)

// Authorizer judges one request. The reason is the text Kubernetes puts in
// the Forbidden message and in the authorization.k8s.io/reason audit
// annotation (for example `RBAC: allowed by ClusterRoleBinding "x" of
// ClusterRole "y" to User "z"`). An error means the authorizer could not
// decide (500 "internal error").
type Authorizer interface {
	Authorize(ctx context.Context, a *request.Attributes) (Decision, string, error)
}

// RuleResolver lists what a user may do in a namespace, for
// SelfSubjectRulesReview (kubectl auth can-i --list).
type RuleResolver interface {
	RulesFor(ctx context.Context, u request.User, namespace string) authorizationv1.SubjectRulesReviewStatus
}
