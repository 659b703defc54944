package server

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/storage/embedded"
	"github.com/leasehold/leasehold/internal/storage/etcd"
)

// openStorage opens the store serve runs on: the etcd cluster named by
// cfg.EtcdServers, or else the embedded store in cfg.DataDir/db. The caller
// closes it.
func openStorage(ctx context.Context, cfg Config, metrics *storageMetrics) (storage.Interface, error) {
	log := cfg.Logger.With("component", "storage")
	if len(cfg.EtcdServers) > 0 {
		s, err := etcd.New(ctx, etcd.Config{
			Endpoints: cfg.EtcdServers,
			Prefix:    cfg.EtcdPrefix,
			CAFile:    cfg.EtcdCAFile,
			CertFile:  cfg.EtcdCertFile,
			KeyFile:   cfg.EtcdKeyFile,
			// As kube-apiserver's --etcd-compaction-interval: history older
			// than one interval goes, which is what HistoryRetention promises.
			CompactInterval: cfg.HistoryRetention,
			Logger:          log,
		})
		if err != nil {
			return nil, fmt.Errorf("opening etcd storage: %w", err)
		}
		return s, nil
	}
	s, err := embedded.Open(filepath.Join(cfg.DataDir, "db"), embedded.Options{
		Logger:        log,
		OnCommit:      metrics.observeCommit,
		OnSyncWait:    metrics.observeSyncWait,
		CommitSpacing: embedded.DefaultCommitSpacing,
		// History: at least HistoryRetention and the watch cache's window,
		// at most ten windows whatever the write rate, which bounds the
		// disk it takes and what a read at the oldest revision costs. The
		// compactor checks once a minute, or once per HistoryRetention
		// when that is shorter: history lives at most retention plus one
		// interval, so a short retention needs a short interval to mean
		// what it says.
		Compaction: embedded.CompactionPolicy{
			Interval: min(time.Minute, cfg.HistoryRetention), KeepFor: cfg.HistoryRetention, KeepRevisions: int64(cfg.WatchCacheWindow),
			MaxRevisions: 10 * int64(cfg.WatchCacheWindow),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("opening storage: %w", err)
	}
	return s, nil
}

// closeStorage closes the store, which Run does last.
func closeStorage(store storage.Interface, log *slog.Logger) {
	if err := store.Close(); err != nil {
		log.Error("closing storage", "err", err)
	}
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

func (m *storageMetrics) observeSyncWait(d time.Duration) { m.syncWait.Observe(d.Seconds()) }

func (m *storageMetrics) observeCommit(n int, d time.Duration) {
	m.commitLatency.Observe(d.Seconds())
	m.batchSize.Observe(float64(n))
}
