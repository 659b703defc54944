package apiserver_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/leasehold/leasehold/internal/apiserver"
	"github.com/leasehold/leasehold/internal/request"
)

const tooMany = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Too many requests, please try again later.","reason":"TooManyRequests","details":{"retryAfterSeconds":1},"code":429}`

// blockingServer serves /block by waiting until release is closed, so a
// test can hold requests in flight; every caller is the user named by the
// X-Test-User header, in the groups of X-Test-Groups.
type blockingServer struct {
	api     http.Handler
	entered chan struct{}
	release chan struct{}
	wg      sync.WaitGroup
}

func newBlockingServer(t *testing.T, limits apiserver.Limits) *blockingServer {
	b := &blockingServer{entered: make(chan struct{}, 16), release: make(chan struct{})}
	h := newDirectHandler(t, func(c *apiserver.Config) {
		c.Limits = limits
		c.Authenticator = authenticatorFunc(func(r *http.Request) (request.User, bool, error) {
			return request.User{Name: r.Header.Get("X-Test-User"), Groups: strings.Split(r.Header.Get("X-Test-Groups"), ",")}, true, nil
		})
		c.NonResource = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/block" {
				b.entered <- struct{}{}
				<-b.release
			}
			_, _ = w.Write([]byte("ok"))
		})
	})
	b.api = h.api
	t.Cleanup(func() {
		close(b.release)
		b.wg.Wait()
	})
	return b
}

func (b *blockingServer) do(user, groups, method, path string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	req.Header.Set("X-Test-User", user)
	req.Header.Set("X-Test-Groups", groups)
	req.Header.Set("Accept", "application/json")
	rec := httptest.NewRecorder()
	b.api.ServeHTTP(rec, req)
	return rec
}

// hold starts a request that stays in flight until the test ends.
func (b *blockingServer) hold(t *testing.T, user, groups, method string) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.do(user, groups, method, "/block")
	}()
	<-b.entered
}

func wantTooMany(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	wantResponse(t, rec, http.StatusTooManyRequests, tooMany)
	if got := rec.Header().Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After: %q, want 1", got)
	}
}

func TestPerUserRequestLimit(t *testing.T) {
	b := newBlockingServer(t, apiserver.Limits{PerUserRequests: 1})
	b.hold(t, "node-1", "system:nodes", "GET")
	wantTooMany(t, b.do("node-1", "system:nodes", "GET", "/healthz"))
	// Other users, and system:masters, are not held back by node-1.
	if rec := b.do("node-2", "system:nodes", "GET", "/healthz"); rec.Code != http.StatusOK {
		t.Errorf("another user: %d %s", rec.Code, rec.Body)
	}
	b.hold(t, "admin", "system:masters", "GET")
	if rec := b.do("admin", "system:masters", "GET", "/healthz"); rec.Code != http.StatusOK {
		t.Errorf("system:masters: %d %s", rec.Code, rec.Body)
	}
}

func TestInflightLimits(t *testing.T) {
	b := newBlockingServer(t, apiserver.Limits{MaxRequestsInflight: 1, MaxMutatingRequestsInflight: 1})
	b.hold(t, "a", "", "GET")
	wantTooMany(t, b.do("b", "", "GET", "/healthz"))
	// Writes have their own limit.
	b.hold(t, "c", "", "POST")
	wantTooMany(t, b.do("d", "", "PUT", "/healthz"))
	// Watches are long-running and do not count: a watch whose time is up
	// at once (timeoutSeconds=-1) is an empty 200 stream.
	if rec := b.do("e", "", "GET", "/api/v1/namespaces?watch=true&timeoutSeconds=-1"); rec.Code != http.StatusOK {
		t.Errorf("watch beside a full in-flight limit: %d %s", rec.Code, rec.Body)
	}
}

func TestPerUserWatchLimit(t *testing.T) {
	b := newBlockingServer(t, apiserver.Limits{PerUserWatches: 1})
	release := make(chan struct{})
	started := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		req := httptest.NewRequest("GET", "/api/v1/namespaces?watch=true", nil)
		req.Header.Set("X-Test-User", "kubectl")
		ctx, cancel := contextUntil(release)
		defer cancel()
		rec := &notifyingRecorder{ResponseRecorder: httptest.NewRecorder(), started: started}
		b.api.ServeHTTP(rec, req.WithContext(ctx))
	}()
	<-started
	wantTooMany(t, b.do("kubectl", "", "GET", "/api/v1/namespaces?watch=true"))
	// Plain requests of the same user are not watches.
	if rec := b.do("kubectl", "", "GET", "/api/v1/namespaces"); rec.Code != http.StatusOK {
		t.Errorf("list beside a full watch limit: %d %s", rec.Code, rec.Body)
	}
	close(release)
	wg.Wait()
	// The watch's share is back.
	if rec := b.do("kubectl", "", "GET", "/api/v1/namespaces?watch=true&timeoutSeconds=-1"); rec.Code != http.StatusOK {
		t.Errorf("watch after the first ended: %d %s", rec.Code, rec.Body)
	}
}
