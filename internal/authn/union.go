package authn

import (
	"errors"
	"net/http"

	"github.com/leasehold/leasehold/internal/request"
)

// Union asks each authenticator in turn; the first that identifies the
// caller wins. If none does, the errors of those that rejected a credential
// are returned joined (401); with no error at all, the request carries no
// credential (ok=false). So an invalid client certificate does not stop a
// valid bearer token on the same request, as in Kubernetes.
type Union []Authenticator

// AuthenticateRequest implements Authenticator.
func (u Union) AuthenticateRequest(r *http.Request) (request.User, bool, error) {
	var errs []error
	for _, a := range u {
		user, ok, err := a.AuthenticateRequest(r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			return user, true, nil
		}
	}
	return request.User{}, false, errors.Join(errs...)
}

// FailOnError asks each authenticator in turn and stops at the first that
// identifies the caller or returns an error. It puts Anonymous behind the
// real authenticators: a presented but invalid credential is a 401, never
// an anonymous request.
type FailOnError []Authenticator

// AuthenticateRequest implements Authenticator.
func (f FailOnError) AuthenticateRequest(r *http.Request) (request.User, bool, error) {
	for _, a := range f {
		user, ok, err := a.AuthenticateRequest(r)
		if err != nil || ok {
			return user, ok, err
		}
	}
	return request.User{}, false, nil
}
