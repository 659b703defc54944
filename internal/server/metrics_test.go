package server_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/internal/server/servertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestMetrics checks that /metrics reports the request path, the store's
// group commits and open watches after real traffic.
func TestMetrics(t *testing.T) {
	srv := servertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	scrape := func() string {
		body, err := srv.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return string(body)
	}
	// The server's own controllers write too (its identity lease), so the
	// test compares counters before and after its own requests.
	before := scrape()
	leases := srv.Client.CoordinationV1().Leases("default")
	l, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "m"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a")}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := leases.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=m"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	<-w.ResultChan() // the watch is registered once it delivers its first event
	text := scrape()
	for series, want := range map[string]float64{
		`apiserver_request_total{code="201",group="coordination.k8s.io",resource="leases",verb="create"}`:       1,
		`apiserver_request_total{code="200",group="coordination.k8s.io",resource="leases",verb="update"}`:       1,
		`apiserver_request_duration_seconds_count{group="coordination.k8s.io",resource="leases",verb="update"}`: 1,
		`apiserver_registered_watchers{group="coordination.k8s.io",resource="leases"}`:                          1,
	} {
		if got := metricValue(text, series) - metricValue(before, series); got < want {
			t.Errorf("%s grew by %v, want at least %v", series, got, want)
		}
	}
	for _, want := range []string{
		`leasehold_storage_commit_duration_seconds_count`,
		`leasehold_storage_commit_sync_wait_seconds_count`,
		`leasehold_storage_commit_batch_size_bucket`,
		`process_resident_memory_bytes`,
		`leasehold_nodelifecycle_monitor_pass_duration_seconds_count`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// metricValue is the value of one series in Prometheus text format (0 if absent).
func metricValue(text, series string) float64 {
	for line := range strings.Lines(text) {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			if v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64); err == nil {
				return v
			}
		}
	}
	return 0
}
