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
	"github.com/leasehold/leasehold/internal/request"
	"github.com/leasehold/leasehold/internal/served"
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

// ObserveMetrics keeps each finished request's series: the same verb,
// resource and code count into one series, another code into its own, a
// watch is counted but not timed, an unknown verb is "other", and an
// abandoned request goes to Cancellations only.
func TestObserveMetricsSeries(t *testing.T) {
	m := apiserver.NewMetrics(nil)
	observe := apiserver.ObserveMetrics(m, served.Stored(time.Now))
	rec := func(verb string, code int) *request.Record {
		return &request.Record{Attributes: request.Attributes{ResourceRequest: true, Verb: verb,
			APIGroup: "coordination.k8s.io", APIVersion: "v1", Resource: "leases"}, Code: code, Received: time.Now()}
	}
	for _, r := range []*request.Record{rec("update", 200), rec("update", 200), rec("update", 409), rec("watch", 200),
		rec("frobnicate", 400), rec("update", apiserver.StatusClientClosedRequest)} {
		observe(r)
	}
	counts := map[[2]string]float64{
		{"update", "200"}: 2, {"update", "409"}: 1, {"watch", "200"}: 1, {"other", "400"}: 1,
	}
	for k, want := range counts {
		if got := testutil.ToFloat64(m.Requests.WithLabelValues(k[0], "coordination.k8s.io", "leases", k[1])); got != want {
			t.Errorf("apiserver_request_total %v = %v, want %v", k, got, want)
		}
	}
	if n := testutil.CollectAndCount(m.Requests); n != len(counts) {
		t.Errorf("apiserver_request_total has %d series, want %d", n, len(counts))
	}
	if got := testutil.ToFloat64(m.Cancellations.WithLabelValues("update", "coordination.k8s.io", "leases")); got != 1 {
		t.Errorf("cancellations = %v, want 1", got)
	}
	if n := testutil.CollectAndCount(m.Latency); n != 2 {
		t.Errorf("apiserver_request_duration_seconds has %d series, want 2 (update, other): a watch is not timed", n)
	}
}

// BenchmarkObserveMetrics is what recording one finished renewal costs.
func BenchmarkObserveMetrics(b *testing.B) {
	observe := apiserver.ObserveMetrics(apiserver.NewMetrics(nil), served.Stored(time.Now))
	rec := &request.Record{Attributes: request.Attributes{ResourceRequest: true, Verb: "update",
		APIGroup: "coordination.k8s.io", APIVersion: "v1", Resource: "leases"}, Code: 200, Received: time.Now()}
	b.ReportAllocs()
	for b.Loop() {
		observe(rec)
	}
}
