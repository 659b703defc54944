package apiserver

import (
	"context"

	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/request"
)

// allowEverything authorizes every request, for tests of the verbs alone.
type allowEverything struct{}

func (allowEverything) Authorize(context.Context, *request.Attributes) (authz.Decision, string, error) {
	return authz.DecisionAllow, "", nil
}
