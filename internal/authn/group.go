package authn

import (
	"net/http"

	"github.com/leasehold/leasehold/internal/request"
)

// AuthenticatedGroupAdder puts every user its Authenticator identifies in
// group system:authenticated, except system:anonymous and users already in
// system:authenticated or system:unauthenticated (Kubernetes' rule).
//
// The groups are copied before the group is appended: authenticators hand
// out slices they share with their caches and token sets, and appending in
// place could write into that shared array.
type AuthenticatedGroupAdder struct {
	Authenticator Authenticator
}

// AuthenticateRequest implements Authenticator.
func (g AuthenticatedGroupAdder) AuthenticateRequest(r *http.Request) (request.User, bool, error) {
	u, ok, err := g.Authenticator.AuthenticateRequest(r)
	if err != nil || !ok {
		return request.User{}, ok, err
	}
	return withAuthenticatedGroup(u), true, nil
}

// withAuthenticatedGroup applies the rule to u.
func withAuthenticatedGroup(u request.User) request.User {
	if u.Name == request.AnonymousUser {
		return u
	}
	for _, g := range u.Groups {
		if g == request.AllAuthenticated || g == request.AllUnauthenticated {
			return u
		}
	}
	groups := make([]string, len(u.Groups), len(u.Groups)+1)
	copy(groups, u.Groups)
	u.Groups = append(groups, request.AllAuthenticated)
	return u
}
