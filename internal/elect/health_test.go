package elect

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection"
)

func TestHealthHandler(t *testing.T) {
	var leading atomic.Bool
	h := healthHandler(leaderelection.NewLeaderHealthzAdaptor(time.Second), leading.Load)
	get := func(path string) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code
	}
	// Before an election is attached the adaptor reports healthy, as in
	// kube-controller-manager: a candidate is healthy.
	if c := get("/healthz"); c != http.StatusOK {
		t.Errorf("/healthz: %d", c)
	}
	if c := get("/readyz"); c != http.StatusServiceUnavailable {
		t.Errorf("/readyz while not leading: %d", c)
	}
	leading.Store(true)
	if c := get("/readyz"); c != http.StatusOK {
		t.Errorf("/readyz while leading: %d", c)
	}
	if c := get("/nope"); c != http.StatusNotFound {
		t.Errorf("/nope: %d", c)
	}
}
