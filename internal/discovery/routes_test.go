package discovery

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// notFoundBody is kube-apiserver's answer for a path it does not serve.
const notFoundBody = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}`

// TestRegisteredRoutes goes through a ServeMux as `serve` mounts discovery:
// every document answers the same with a trailing slash, and a path that
// nothing serves is a Status, not the mux's plain text.
func TestRegisteredRoutes(t *testing.T) {
	mux := http.NewServeMux()
	newTestDiscovery(t).Register(mux)
	do := func(method, path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, nil)
		req.Header.Set("Accept", "application/json")
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, req)
		return w
	}
	for _, p := range []string{"/version", "/api", "/api/v1", "/apis", "/apis/coordination.k8s.io", "/apis/coordination.k8s.io/v1"} {
		plain, slash := do("GET", p), do("GET", p+"/")
		if plain.Code != http.StatusOK || slash.Code != http.StatusOK || plain.Body.String() != slash.Body.String() {
			t.Errorf("GET %s: %d %q; GET %s/: %d %q", p, plain.Code, plain.Body, p, slash.Code, slash.Body)
		}
	}
	for _, tc := range []struct{ method, path string }{
		{"GET", "/nothing-here"}, {"GET", "/apis/coordination.k8s.io/v1/x/y/z/a/b/c/d"},
		{"POST", "/nothing-here"}, {"GET", "/apis/no.such.group"}, {"GET", "/api/v2/"},
	} {
		w := do(tc.method, tc.path)
		var got bytes.Buffer
		if err := json.Compact(&got, w.Body.Bytes()); err != nil || w.Code != http.StatusNotFound || got.String() != notFoundBody {
			t.Errorf("%s %s: %d %s, want 404 %s", tc.method, tc.path, w.Code, w.Body, notFoundBody)
		}
	}
	if w := do("POST", "/api/v1/"); w.Code != http.StatusMethodNotAllowed || !strings.Contains(w.Body.String(), `"reason": "MethodNotAllowed"`) {
		t.Errorf("POST /api/v1/: %d %s, want a 405 Status", w.Code, w.Body)
	}
}
