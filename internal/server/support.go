package server

import (
	"crypto/tls"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type tlsConfigT = *tls.Config

// readiness backs /readyz: ready between start of serving and shutdown,
// while every check holds (storehealth.go).
type readiness struct {
	ok     atomic.Bool
	checks []healthCheck
}

func (r *readiness) set(v bool) { r.ok.Store(v) }

func (r *readiness) serve(w http.ResponseWriter, req *http.Request) {
	shutdown := healthCheck{name: "shutdown", check: func() error {
		if !r.ok.Load() {
			return errShuttingDown
		}
		return nil
	}}
	serveHealth(w, req, "readyz", append([]healthCheck{shutdown}, r.checks...))
}

// storageMetrics are the embedded store's commit figures.
type storageMetrics struct {
	commitLatency prometheus.Histogram
	syncWait      prometheus.Histogram
	batchSize     prometheus.Histogram
}

func newStorageMetrics(reg prometheus.Registerer) *storageMetrics {
	m := &storageMetrics{
		commitLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "leasehold_storage_commit_duration_seconds",
			Help:    "Time from starting a group commit to the end of its fsync.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
		syncWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "leasehold_storage_commit_sync_wait_seconds",
			Help:    "Time a group commit waited for its WAL fsync after its batch was applied.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "leasehold_storage_commit_batch_size",
			Help:    "Writes sharing one fsync in a group commit.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 11),
		}),
	}
	reg.MustRegister(m.commitLatency, m.syncWait, m.batchSize)
	return m
}

// newMonitorPassMetric is the node lifecycle controller's pass duration.
func newMonitorPassMetric(reg prometheus.Registerer) func(time.Duration, int) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "leasehold_nodelifecycle_monitor_pass_duration_seconds",
		Help:    "Duration of one node lifecycle monitor pass over every node.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
	})
	reg.MustRegister(h)
	return func(d time.Duration, _ int) { h.Observe(d.Seconds()) }
}

func (m *storageMetrics) observeSyncWait(d time.Duration) { m.syncWait.Observe(d.Seconds()) }

func (m *storageMetrics) observeCommit(n int, d time.Duration) {
	m.commitLatency.Observe(d.Seconds())
	m.batchSize.Observe(float64(n))
}
