package authn

import (
	"errors"
	"testing"

	"github.com/leasehold/leasehold/internal/request"
)

// staticTokens is a TokenAuthenticator over a fixed map.
type staticTokens map[string]request.User

func (s staticTokens) AuthenticateToken(token string) (request.User, bool, error) {
	u, ok := s[token]
	return u, ok, nil
}

func TestBearerHeaderVariants(t *testing.T) {
	a := BearerAuthenticator{Tokens: staticTokens{"tok": {Name: "alice"}}}
	cases := []struct {
		header  string
		user    string // "" when not authenticated
		invalid bool   // ErrInvalidBearerToken
	}{
		{header: ""},
		{header: "Bearer tok", user: "alice"},
		{header: "bearer tok", user: "alice"},
		{header: "BEARER tok", user: "alice"},
		{header: "  Bearer tok  ", user: "alice"},
		{header: "Bearer tok trailing words", user: "alice"},
		{header: "Bearer  tok"}, // two spaces: the token field is empty
		{header: "Bearer"},
		{header: "Bearer "},
		{header: "Basic dG9rOg=="},
		{header: "Token tok"},
		{header: "Bearer\ttok"}, // a tab does not separate the scheme
		{header: "Bearer other", invalid: true},
		{header: "Bearer TOK", invalid: true}, // tokens are case-sensitive
	}
	for _, tc := range cases {
		r := bearerRequest(tc.header)
		u, ok, err := a.AuthenticateRequest(r)
		switch {
		case tc.user != "":
			if !ok || err != nil || u.Name != tc.user {
				t.Errorf("%q: %+v ok=%v err=%v, want %s", tc.header, u, ok, err, tc.user)
			}
			if r.Header.Get("Authorization") != "" {
				t.Errorf("%q: the Authorization header is left on an authenticated request", tc.header)
			}
		case tc.invalid:
			if ok || !errors.Is(err, ErrInvalidBearerToken) || err.Error() != "invalid bearer token" {
				t.Errorf("%q: ok=%v err=%v, want invalid bearer token", tc.header, ok, err)
			}
			if r.Header.Get("Authorization") == "" {
				t.Errorf("%q: the header of a refused request was removed", tc.header)
			}
		default:
			if ok || err != nil {
				t.Errorf("%q: ok=%v err=%v, want no credential", tc.header, ok, err)
			}
		}
	}
}
