package apiserver_test

import (
	"context"
	"net/http"

	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/request"
)

// asUser authenticates every request as one user: tests drive the handler
// directly, without the TLS layer that carries client certificates.
type asUser request.User

func (u asUser) AuthenticateRequest(*http.Request) (request.User, bool, error) {
	return request.User(u), true, nil
}

// allowAll authorizes every request.
type allowAll struct{}

func (allowAll) Authorize(context.Context, *request.Attributes) (authz.Decision, string, error) {
	return authz.DecisionAllow, "", nil
}
