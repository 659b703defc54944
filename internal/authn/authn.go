// Package authn identifies the caller of an API request, as kube-apiserver's
// authentication does: client certificates, static bearer tokens, and
// anonymous requests.
package authn

import (
	"net/http"

	"github.com/leasehold/leasehold/internal/request"
)

// Authenticator identifies the caller of r.
//
//   - ok=true: the caller is u.
//   - ok=false, err=nil: r carries no credential this authenticator reads;
//     the next one is asked.
//   - err!=nil: r carries a credential of this kind that is not valid; the
//     request is answered 401 unless another authenticator accepts it.
type Authenticator interface {
	AuthenticateRequest(r *http.Request) (u request.User, ok bool, err error)
}
