package apiserver

import (
	"net/http"
)

// User is an authenticated caller.
type User struct {
	Name   string
	Groups []string
}

// Authenticator identifies the caller of a request; ok=false means the request
// carries no valid credentials (401).
type Authenticator interface {
	Authenticate(r *http.Request) (User, bool)
}

// CertAuthenticator identifies callers by their verified TLS client
// certificate: CN is the user name, O the groups, as kube-apiserver does.
type CertAuthenticator struct{}

// Authenticate implements Authenticator.
func (CertAuthenticator) Authenticate(r *http.Request) (User, bool) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return User{}, false
	}
	cert := r.TLS.VerifiedChains[0][0]
	return User{Name: cert.Subject.CommonName, Groups: append([]string(nil), cert.Subject.Organization...)}, true
}

// Authenticators tries each in turn.
type Authenticators []Authenticator

// Authenticate implements Authenticator.
func (as Authenticators) Authenticate(r *http.Request) (User, bool) {
	for _, a := range as {
		if u, ok := a.Authenticate(r); ok {
			return u, true
		}
	}
	return User{}, false
}
