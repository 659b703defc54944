package server

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/leasehold/leasehold/internal/request"
)

func TestNewAuthenticatorFromFlags(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte("secret,tess,1,devs\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	anonymousOff, err := newAuthenticator(Config{TokenAuthFile: tokens, DisableAnonymousAuth: true}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/api", nil)
	if _, ok, err := anonymousOff.AuthenticateRequest(r); ok || err != nil {
		t.Fatalf("no credential with --anonymous-auth=false: ok=%v err=%v", ok, err)
	}
	r.Header.Set("Authorization", "Bearer secret")
	if u, ok, _ := anonymousOff.AuthenticateRequest(r); !ok || u.Name != "tess" {
		t.Fatalf("token from --token-auth-file: %+v ok=%v", u, ok)
	}

	anonymousOn, err := newAuthenticator(Config{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if u, ok, _ := anonymousOn.AuthenticateRequest(httptest.NewRequest("GET", "/healthz", nil)); !ok || u.Name != request.AnonymousUser {
		t.Fatalf("the zero Config must keep anonymous requests on: %+v ok=%v", u, ok)
	}

	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("secret,tess\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := "token file '" + bad + "' must have at least 3 columns (token, user name, user uid), found 2"
	if _, err := newAuthenticator(Config{TokenAuthFile: bad}, nil, nil); err == nil || err.Error() != want {
		t.Fatalf("invalid token file: %v, want %q", err, want)
	}
}
