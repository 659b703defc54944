package apiserver_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/server/servertest"
)

// ?timeout= bounds a request as kube-apiserver's WithRequestDeadline: an
// invalid one is a 400 with kube's message, and a valid shorter one ends
// the wait for a resourceVersion the server has not reached (3 s
// otherwise) at the client's deadline.
func TestRequestTimeoutParameter(t *testing.T) {
	srv := servertest.Start(t)
	const leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
	resp, body := raw(t, srv, http.MethodGet, leases+"?timeout=soon", "", "application/json", nil)
	st := statusOf(t, body)
	if resp.StatusCode != http.StatusBadRequest || st.Message != `invalid timeout specified in the request URL - time: invalid duration "soon"` {
		t.Fatalf("?timeout=soon: %d %q", resp.StatusCode, st.Message)
	}
	start := time.Now()
	resp, body = raw(t, srv, http.MethodGet, leases+"?resourceVersion=999999999&timeout=500ms", "", "application/json", nil)
	took := time.Since(start)
	if resp.StatusCode != http.StatusGatewayTimeout || took > 2500*time.Millisecond {
		t.Fatalf("future resourceVersion with ?timeout=500ms: %d after %v: %s", resp.StatusCode, took, body)
	}
}
