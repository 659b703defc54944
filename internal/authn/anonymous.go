package authn

import (
	"net/http"

	"github.com/leasehold/leasehold/internal/request"
)

// Anonymous identifies every request as system:anonymous in group
// system:unauthenticated (--anonymous-auth). It must come last in a chain,
// behind FailOnError, so that only requests that carry no credential at all
// become anonymous.
type Anonymous struct{}

// AuthenticateRequest implements Authenticator.
func (Anonymous) AuthenticateRequest(*http.Request) (request.User, bool, error) {
	return request.User{Name: request.AnonymousUser, Groups: []string{request.AllUnauthenticated}}, true, nil
}
