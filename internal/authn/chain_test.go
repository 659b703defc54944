package authn

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/request"
)

// chainFixture is a chain with a CA and a token file holding "good-token"
// for user "tess" in group "devs".
type chainFixture struct {
	ca, other *testCA
	tokenFile string
}

func newChainFixture(t *testing.T) *chainFixture {
	f := &chainFixture{ca: newTestCA(t, "ca"), other: newTestCA(t, "other")}
	f.tokenFile = filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(f.tokenFile, []byte("good-token,tess,uid-t,devs\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *chainFixture) chain(t *testing.T, anonymous bool) *Chain {
	t.Helper()
	c, err := New(Config{ClientCAs: f.ca.pool(), TokenFile: f.tokenFile, Anonymous: anonymous})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestChainOutcomes(t *testing.T) {
	f := newChainFixture(t)
	good := f.ca.issue(t, clientTemplate("system:node:n1", "system:nodes"))
	stranger := f.other.issue(t, clientTemplate("mallory", "system:masters"))
	withToken := func(r *http.Request, h string) *http.Request { r.Header.Set("Authorization", h); return r }

	type want struct {
		user   string
		groups []string
		err    bool
	}
	anonymous := want{user: request.AnonymousUser, groups: []string{request.AllUnauthenticated}}
	unauthenticated := want{} // ok=false, no error
	cases := []struct {
		name        string
		r           func() *http.Request
		anon, noAnn want
	}{
		{"certificate", func() *http.Request { return certRequest(good) },
			want{user: "system:node:n1", groups: []string{"system:nodes", request.AllAuthenticated}}, want{user: "system:node:n1", groups: []string{"system:nodes", request.AllAuthenticated}}},
		{"token", func() *http.Request { return bearerRequest("Bearer good-token") },
			want{user: "tess", groups: []string{"devs", request.AllAuthenticated}}, want{user: "tess", groups: []string{"devs", request.AllAuthenticated}}},
		{"no credential", func() *http.Request { return bearerRequest("") }, anonymous, unauthenticated},
		{"another scheme", func() *http.Request { return bearerRequest("Basic dXNlcjpwdw==") }, anonymous, unauthenticated},
		{"bad token", func() *http.Request { return bearerRequest("Bearer bad-token") }, want{err: true}, want{err: true}},
		{"untrusted certificate", func() *http.Request { return certRequest(stranger) }, want{err: true}, want{err: true}},
		// A valid credential wins over an invalid one on the same request.
		{"untrusted certificate and good token", func() *http.Request { return withToken(certRequest(stranger), "Bearer good-token") },
			want{user: "tess", groups: []string{"devs", request.AllAuthenticated}}, want{user: "tess", groups: []string{"devs", request.AllAuthenticated}}},
		{"good certificate and bad token", func() *http.Request { return withToken(certRequest(good), "Bearer bad-token") },
			want{user: "system:node:n1", groups: []string{"system:nodes", request.AllAuthenticated}}, want{user: "system:node:n1", groups: []string{"system:nodes", request.AllAuthenticated}}},
	}
	for _, anon := range []bool{true, false} {
		c := f.chain(t, anon)
		for _, tc := range cases {
			w := tc.noAnn
			if anon {
				w = tc.anon
			}
			u, ok, err := c.AuthenticateRequest(tc.r())
			switch {
			case w.err:
				if ok || err == nil {
					t.Errorf("anonymous=%v %s: %+v ok=%v, want an error", anon, tc.name, u, ok)
				}
			case w.user == "":
				if ok || err != nil {
					t.Errorf("anonymous=%v %s: %+v ok=%v err=%v, want no user and no error", anon, tc.name, u, ok, err)
				}
			default:
				if !ok || err != nil || u.Name != w.user || !slices.Equal(u.Groups, w.groups) {
					t.Errorf("anonymous=%v %s: %+v ok=%v err=%v, want %s in %q", anon, tc.name, u, ok, err, w.user, w.groups)
				}
			}
		}
	}
}

func TestChainErrorNamesEveryRefusal(t *testing.T) {
	f := newChainFixture(t)
	c := f.chain(t, true)
	r := certRequest(f.other.issue(t, clientTemplate("mallory")))
	r.Header.Set("Authorization", "Bearer bad-token")
	_, ok, err := c.AuthenticateRequest(r)
	if ok || !errors.Is(err, ErrInvalidBearerToken) {
		t.Fatalf("ok=%v err=%v, want both refusals", ok, err)
	}
	if got := err.Error(); !containsAll(got, "verifying certificate SN=", "unknown authority", "invalid bearer token") {
		t.Fatalf("error %q does not name both refusals", got)
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func TestAuthenticatedGroupAdderRule(t *testing.T) {
	cases := []struct {
		name string
		in   request.User
		want []string
	}{
		{"plain user", request.User{Name: "u", Groups: []string{"g"}}, []string{"g", request.AllAuthenticated}},
		{"no groups", request.User{Name: "u"}, []string{request.AllAuthenticated}},
		{"anonymous", request.User{Name: request.AnonymousUser, Groups: []string{"x"}}, []string{"x"}},
		{"already authenticated", request.User{Name: "u", Groups: []string{request.AllAuthenticated, "g"}}, []string{request.AllAuthenticated, "g"}},
		{"unauthenticated group", request.User{Name: "u", Groups: []string{request.AllUnauthenticated}}, []string{request.AllUnauthenticated}},
	}
	for _, tc := range cases {
		got := withAuthenticatedGroup(tc.in)
		if !slices.Equal(got.Groups, tc.want) || got.Name != tc.in.Name {
			t.Errorf("%s: groups %q, want %q", tc.name, got.Groups, tc.want)
		}
	}
}

// The adder must not append into the authenticator's array: two requests
// sharing one cached user with spare capacity would otherwise see each
// other's groups.
func TestAuthenticatedGroupAdderDoesNotAlias(t *testing.T) {
	shared := make([]string, 1, 4)
	shared[0] = "g"
	src := fixedUser{request.User{Name: "u", Groups: shared}}
	adder := AuthenticatedGroupAdder{Authenticator: src}
	u1, _, _ := adder.AuthenticateRequest(bearerRequest(""))
	u1.Groups[0] = "changed"
	u2, _, _ := adder.AuthenticateRequest(bearerRequest(""))
	if shared[:cap(shared)][1] != "" || shared[0] != "g" {
		t.Fatalf("the source's array was written: %q", shared[:cap(shared)])
	}
	if !slices.Equal(u2.Groups, []string{"g", request.AllAuthenticated}) {
		t.Fatalf("second user's groups %q", u2.Groups)
	}
}

type fixedUser struct{ u request.User }

func (f fixedUser) AuthenticateRequest(*http.Request) (request.User, bool, error) {
	return f.u, true, nil
}

func TestChainWithoutAuthenticators(t *testing.T) {
	c, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.AuthenticateRequest(bearerRequest("")); ok || err != nil {
		t.Fatalf("empty chain, no credential: ok=%v err=%v, want no credential", ok, err)
	}
	c, err = New(Config{Anonymous: true})
	if err != nil {
		t.Fatal(err)
	}
	if u, ok, _ := c.AuthenticateRequest(bearerRequest("")); !ok || u.Name != request.AnonymousUser {
		t.Fatalf("anonymous-only chain: %+v ok=%v", u, ok)
	}
	// Without a token file a bearer token is still a credential, and an
	// unknown one: 401, not anonymous.
	if u, ok, err := c.AuthenticateRequest(bearerRequest("Bearer anything")); ok || !errors.Is(err, ErrInvalidBearerToken) {
		t.Fatalf("bearer token without a token file: %+v ok=%v err=%v, want invalid bearer token", u, ok, err)
	}
}

// Run returns once its context ends, with and without a token file (goleak
// in TestMain checks nothing is left running).
func TestChainRunStops(t *testing.T) {
	f := newChainFixture(t)
	for _, c := range []*Chain{f.chain(t, true), mustChain(t, Config{})} {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(1)
		var runErr error
		go func() { defer wg.Done(); runErr = c.Run(ctx) }()
		time.Sleep(10 * time.Millisecond)
		cancel()
		wg.Wait()
		if runErr != nil {
			t.Fatalf("Run: %v", runErr)
		}
	}
}

func mustChain(t *testing.T, cfg Config) *Chain {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
