package authn

import (
	"errors"
	"net/http"
	"strings"

	"github.com/leasehold/leasehold/internal/request"
)

// ErrInvalidBearerToken is the error for a bearer token no token
// authenticator knows (Kubernetes' wording).
var ErrInvalidBearerToken = errors.New("invalid bearer token")

// TokenAuthenticator maps a bearer token to its user; ok=false means the
// token is unknown.
type TokenAuthenticator interface {
	AuthenticateToken(token string) (u request.User, ok bool, err error)
}

// BearerAuthenticator reads the token of an "Authorization: Bearer <token>"
// header exactly as kube-apiserver does: the scheme is case-insensitive, the
// token is the text after the first space up to the next one, and a header
// that is absent, of another scheme, or with an empty token carries no
// credential. A token that is present but unknown is an error (401).
type BearerAuthenticator struct {
	Tokens TokenAuthenticator
}

// AuthenticateRequest implements Authenticator. On success it removes the
// Authorization header, so that no later stage (logs, audit, proxies) can
// see or reuse the token.
func (a BearerAuthenticator) AuthenticateRequest(r *http.Request) (request.User, bool, error) {
	token, found := bearerToken(r.Header.Get("Authorization"))
	if !found {
		return request.User{}, false, nil
	}
	u, ok, err := a.Tokens.AuthenticateToken(token)
	if ok {
		r.Header.Del("Authorization")
	}
	if !ok && err == nil {
		err = ErrInvalidBearerToken
	}
	return u, ok, err
}

// bearerToken extracts the token from an Authorization header value.
func bearerToken(header string) (string, bool) {
	auth := strings.TrimSpace(header)
	if auth == "" {
		return "", false
	}
	scheme, rest, ok := strings.Cut(auth, " ")
	if !ok || strings.ToLower(scheme) != "bearer" {
		return "", false
	}
	token, _, _ := strings.Cut(rest, " ")
	return token, token != ""
}
