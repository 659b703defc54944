package server

import (
	"context"

	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/request"
)

// authenticatedOrPublic is serve's authorizer until --authorization-mode
// (Node, RBAC) is wired: it keeps the rule that held before the request
// pipeline had an authorization stage. Every authenticated caller may do
// everything; an anonymous one may only read the public paths that
// kube-apiserver's system:public-info-viewer role opens to everyone.
type authenticatedOrPublic struct{}

// Authorize implements authz.Authorizer.
func (authenticatedOrPublic) Authorize(_ context.Context, a *request.Attributes) (authz.Decision, string, error) {
	if a.User.InGroup(request.AllAuthenticated) {
		return authz.DecisionAllow, "", nil
	}
	if !a.ResourceRequest && a.Verb == "get" {
		switch a.Path {
		case "/healthz", "/livez", "/readyz", "/version", "/version/":
			return authz.DecisionAllow, "", nil
		}
	}
	return authz.DecisionNoOpinion, "", nil
}
