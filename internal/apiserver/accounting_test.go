package apiserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/apiserver"
)

// resetBody is a request body whose client resets the stream after a few
// bytes: the request's context is cancelled and the read fails, as an
// HTTP/2 RST_STREAM does.
type resetBody struct {
	cancel context.CancelFunc
	sent   bool
}

func (b *resetBody) Read(p []byte) (int, error) {
	if !b.sent {
		b.sent = true
		return copy(p, `{"apiVersion":`), nil
	}
	b.cancel()
	return 0, errors.New("stream error: stream ID 3; CANCEL")
}

// A request its client abandoned is neither a 5xx (nor any code) in
// apiserver_request_total nor an ERROR line: it is counted in
// leasehold_apiserver_request_cancellations_total, and many of them make one
// summary line.
func TestClientCancellationsAreNotServerErrors(t *testing.T) {
	var logs bytes.Buffer
	h := newDirectHandler(t, func(c *apiserver.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	path := leasePath(t, h.api, "cancel", "l")
	for range 100 {
		ctx, cancel := context.WithCancel(context.Background())
		req := httptest.NewRequest(http.MethodPut, path, &resetBody{cancel: cancel}).WithContext(ctx)
		req.ContentLength = 500
		req.Header.Set("Content-Type", "application/json")
		h.api.ServeHTTP(httptest.NewRecorder(), req)
		cancel()
	}
	if got := testutil.ToFloat64(h.metrics.Cancellations.WithLabelValues("update", "coordination.k8s.io", "leases")); got != 100 {
		t.Errorf("cancellations counted %v, want 100", got)
	}
	if n := testutil.CollectAndCount(h.metrics.Requests); n != 2 {
		// The namespace's and the lease's creation only.
		t.Errorf("apiserver_request_total has %d series, want 2 (the creates): %s", n, logs.String())
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("cancellations logged errors:\n%s", logs.String())
	}
	if n := strings.Count(logs.String(), "requests cancelled by their clients"); n != 1 {
		t.Errorf("%d summary lines in a minute, want 1:\n%s", n, logs.String())
	}
}

// A PUT whose resourceVersion the store has not reached is the stale
// version's 409 at once, as in kube-apiserver, not a 504 after a wait.
func TestUpdateWithFutureResourceVersionConflicts(t *testing.T) {
	h := newDirectHandler(t)
	path := leasePath(t, h.api, "future", "l")
	body := `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l","namespace":"future","resourceVersion":"999999"},"spec":{"holderIdentity":"b"}}`
	start := time.Now()
	rec := doRecorded(h.api, http.MethodPut, path, "application/json", "application/json", []byte(body))
	if took := time.Since(start); took > time.Second {
		t.Errorf("answered after %v", took)
	}
	var st metav1.Status
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusConflict || st.Reason != metav1.StatusReasonConflict ||
		st.Message != `Operation cannot be fulfilled on leases.coordination.k8s.io "l": the object has been modified; please apply your changes to the latest version and try again` {
		t.Fatalf("PUT at a future resourceVersion: %d %s", rec.Code, rec.Body)
	}
}
