package embedded

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Options configures a Store. The zero value is usable: it logs nothing and
// never compacts automatically.
type Options struct {
	// Logger receives the driver's and pebble's logs (pebble's routine
	// messages at Debug). Nil discards them.
	Logger *slog.Logger
	// OnCommit, if set, is called by the committer after every durable batch
	// with the number of writes it held and the time from starting the batch
	// to the end of its fsync. It runs on the write path: keep it cheap
	// (update a metric, nothing more).
	OnCommit func(batchSize int, d time.Duration)
	// OnSyncWait, if set, is called by the committer for every batch it
	// writes with how long pebble waited for the batch's WAL fsync (its
	// CommitWaitDuration); OnCommit's duration minus this one is the rest of
	// the commit. It runs on the write path like OnCommit.
	OnSyncWait func(d time.Duration)
	// OnCompact, if set, is called after every successful compaction.
	OnCompact func(revision int64, d time.Duration)
	// MaxBatch caps the writes committed in one batch (default 1024).
	MaxBatch int
	// CommitSpacing, if positive, is the least time between the starts of
	// two batches once writes come concurrently (the previous batch held
	// more than one): each batch costs an fsync, so under concurrent load
	// waiting gathers more writes into fewer fsyncs (see spacing.go). A
	// write waits at most this long more. Zero commits each batch as soon
	// as the previous one is durable.
	CommitSpacing time.Duration
	// WatchBuffer is how many committed batches a live watcher may lag behind
	// before it is detached and made to catch up from the log (default 1024).
	WatchBuffer int
	// Compaction enables the automatic background compactor.
	Compaction CompactionPolicy
	// ReservedBytes is the free disk space the store keeps for pebble's own
	// work (memtable flushes, compactions, WAL and MANIFEST rotation, all of
	// which pebble cannot survive failing): writes are refused with
	// storage.ErrInsufficientStorage while less is free, and the store opens
	// read-only when less is free at start (see disk.go). 0 means
	// DefaultReservedBytes; negative disables the check (tests only: a full
	// disk then reaches pebble).
	ReservedBytes int64
	// ProbeInterval is how often a store that refuses writes checks whether
	// the disk takes them again (default 1s).
	ProbeInterval time.Duration

	// fs replaces the operating system's file system (tests inject faults).
	fs vfs.FS
}

// DefaultReservedBytes is the default Options.ReservedBytes: four of the
// 16 MiB memtables pebble may have to flush, which also covers the WAL
// pebble preallocates, a MANIFEST rewrite and the output of a compaction
// of a store of leases.
const DefaultReservedBytes = 64 << 20

// CompactionPolicy says how much history the automatic compactor keeps. When
// both Keep fields are set, the history that satisfies both (the longer one)
// is kept.
type CompactionPolicy struct {
	// Interval between checks; 0 disables automatic compaction.
	Interval time.Duration
	// KeepRevisions keeps at least the newest KeepRevisions revisions.
	KeepRevisions int64
	// KeepFor keeps at least the revisions written during the last KeepFor.
	// The compactor persists (time, revision) samples, so the age of a
	// revision is known across restarts (by the wall clock: a clock stepped
	// back delays compaction, one stepped forward hastens it).
	KeepFor time.Duration
	// MaxRevisions, if set, caps the history whatever KeepFor asks: at
	// most that many revisions stay before the newest. It bounds the disk
	// the history takes under a write burst, and what a read at the oldest
	// revision still allowed costs (it undoes every later log record). It
	// must not be below KeepRevisions.
	MaxRevisions int64
}

const (
	defaultMaxBatch    = 1024
	defaultWatchBuffer = 1024
)

func (o Options) withDefaults() (Options, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxBatch < 0 || o.WatchBuffer < 0 {
		return o, fmt.Errorf("MaxBatch (%d) and WatchBuffer (%d) must not be negative", o.MaxBatch, o.WatchBuffer)
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = defaultMaxBatch
	}
	if o.WatchBuffer == 0 {
		o.WatchBuffer = defaultWatchBuffer
	}
	c := o.Compaction
	if o.ReservedBytes == 0 {
		o.ReservedBytes = DefaultReservedBytes
	}
	if o.CommitSpacing < 0 {
		return o, fmt.Errorf("CommitSpacing %s is negative", o.CommitSpacing)
	}
	if o.ProbeInterval < 0 {
		return o, fmt.Errorf("ProbeInterval %s is negative", o.ProbeInterval)
	}
	if o.ProbeInterval == 0 {
		o.ProbeInterval = time.Second
	}
	if o.fs == nil {
		o.fs = vfs.Default
	}
	if c.Interval < 0 || c.KeepRevisions < 0 || c.KeepFor < 0 || c.MaxRevisions < 0 {
		return o, fmt.Errorf("compaction policy %+v has a negative field", c)
	}
	if c.Interval > 0 && c.KeepRevisions == 0 && c.KeepFor == 0 {
		return o, fmt.Errorf("automatic compaction every %s needs KeepRevisions or KeepFor", c.Interval)
	}
	if c.MaxRevisions > 0 && c.MaxRevisions < c.KeepRevisions {
		return o, fmt.Errorf("compaction policy keeps at least %d revisions and at most %d", c.KeepRevisions, c.MaxRevisions)
	}
	return o, nil
}

// pebbleLogger routes pebble's logs to slog. Pebble logs routine events
// (flushes, compactions) through Infof, so they go to Debug.
type pebbleLogger struct{ log *slog.Logger }

var _ pebble.Logger = pebbleLogger{}

func (l pebbleLogger) Infof(format string, args ...any) {
	// Formatting is skipped unless someone reads Debug: pebble logs often.
	if !l.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	l.log.Debug(fmt.Sprintf(format, args...))
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error(fmt.Sprintf(format, args...))
}

// Fatalf must not return: pebble calls it when it cannot go on, such as a
// failed WAL write or sync (the batch is then in the memtable but maybe not
// on disk). It panics with a pebbleFatal, which the store recovers where it
// calls pebble itself (see disk.go); raised on pebble's own goroutines, it
// ends the process with the message.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error(msg, "fatal", true)
	panic(pebbleFatal{msg: msg})
}
