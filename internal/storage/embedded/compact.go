package embedded

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/leasehold/leasehold/internal/storage"
)

// Compact implements storage.Interface. Reads below revision fail with
// ErrCompacted from the moment it returns; compacting at or below the
// current compacted revision does nothing.
//
// It first records revision as compacted (one synced batch), then sweeps
// the log records written since the last sweep, up to revision, deleting
// what no read at or after revision can need: the record each of them
// replaced, and the records of deletes. What stays at or below revision is
// the newest record of every key that still exists: a write after revision
// names it as the value it replaced, and reading before that write, or
// replaying it as a watch event, needs that value. So the log keeps at most
// one record per live key at or below revision, as etcd keeps one revision
// per key when it compacts.
//
// The sweep's progress is recorded only when it completes; a crash in the
// middle leaves records that the next compaction sweeps again (deleting
// twice is harmless).
func (s *Store) Compact(ctx context.Context, revision int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	if cur := s.rev.Load(); revision > cur {
		return fmt.Errorf("compact at %d, newest is %d: %w", revision, cur, storage.ErrFutureRevision)
	}
	if revision <= s.compacted.Load() {
		return nil
	}
	start := time.Now()
	if err := s.db.Set(metaCompacted, encodeInt64(revision), pebble.Sync); err != nil {
		return fmt.Errorf("compact at %d: %w", revision, err)
	}
	s.compacted.Store(revision)
	deleted, err := s.sweep(ctx, revision)
	if err != nil {
		return fmt.Errorf("compact at %d: %w", revision, err)
	}
	d := time.Since(start)
	s.opts.Logger.Debug("compacted", "revision", revision, "deletedRecords", deleted, "duration", d)
	if s.opts.OnCompact != nil {
		s.opts.OnCompact(revision, d)
	}
	return nil
}

// sweepBatch caps the deletions in one pebble batch during a sweep, so a
// compaction after a long busy period does not build one huge batch.
const sweepBatch = 4096

// sweep deletes the log records that writes in (s.swept, revision] made
// unneeded (see Compact) and records revision as swept. The caller holds
// compactMu and has already recorded revision as compacted.
func (s *Store) sweep(ctx context.Context, revision int64) (int, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: logKey(s.swept + 1), UpperBound: logKey(revision + 1)})
	if err != nil {
		return 0, fmt.Errorf("sweep log to %d: iterate log: %w", revision, err)
	}
	deleted, err := s.sweepRecords(ctx, it)
	if closeErr := it.Close(); err == nil && closeErr != nil {
		err = fmt.Errorf("iterate log: %w", closeErr)
	}
	if err == nil {
		// Pebble's WAL is ordered: syncing this write makes the sweep's
		// unsynced batches durable too.
		err = s.db.Set(metaSwept, encodeInt64(revision), pebble.Sync)
	}
	if err != nil {
		return deleted, fmt.Errorf("sweep log to %d: %w", revision, err)
	}
	s.swept = revision
	return deleted, nil
}

// sweepRecords deletes, for every log record it iterates, the record it
// replaced and, for a delete, the record itself, in unsynced batches of
// sweepBatch deletions. It returns how many deletions it committed.
func (s *Store) sweepRecords(ctx context.Context, it *pebble.Iterator) (deleted int, err error) {
	b := s.db.NewBatch()
	defer func() { err = errors.Join(err, b.Close()) }()
	commit := func() error {
		if err := b.Commit(pebble.NoSync); err != nil {
			return err
		}
		deleted += int(b.Count())
		b.Reset()
		return nil
	}
	for ok := it.First(); ok; ok = it.Next() {
		rev, err := decodeLogKey(it.Key())
		if err != nil {
			return deleted, err
		}
		typ, prev, err := decodeLogLinks(it.Value())
		if err != nil {
			return deleted, fmt.Errorf("log revision %d: %w", rev, err)
		}
		if prev != 0 {
			if err := b.Delete(logKey(prev), nil); err != nil {
				return deleted, err
			}
		}
		if typ == storage.EventDelete {
			if err := b.Delete(logKey(rev), nil); err != nil {
				return deleted, err
			}
		}
		if b.Count() >= sweepBatch {
			if err := ctx.Err(); err != nil {
				return deleted, err
			}
			if err := commit(); err != nil {
				return deleted, err
			}
		}
	}
	if b.Empty() {
		return deleted, nil
	}
	return deleted, commit()
}

// revisionSample remembers the revision at one moment, so the compactor can
// turn "keep the last KeepFor" into a revision.
type revisionSample struct {
	at  time.Time
	rev int64
}

// compactLoop is the automatic compactor, owned by the Store and stopped by
// Close.
func (s *Store) compactLoop() {
	defer s.goroutines.Done()
	p := s.opts.Compaction
	ticker := time.NewTicker(p.Interval)
	defer ticker.Stop()
	var samples []revisionSample
	for {
		select {
		case <-s.closing:
			return
		case now := <-ticker.C:
			var target int64
			target, samples = compactionTarget(p, now, s.rev.Load(), samples)
			if target <= s.compacted.Load() {
				continue
			}
			err := s.Compact(context.Background(), target)
			if errors.Is(err, ErrClosed) {
				return
			}
			if err != nil {
				s.opts.Logger.Error("automatic compaction failed", "revision", target, "err", err)
			}
		}
	}
}

// compactionTarget returns the newest revision the policy allows compacting
// at time now, with cur the newest revision, and the samples still needed.
// A target of 0 compacts nothing.
func compactionTarget(p CompactionPolicy, now time.Time, cur int64, samples []revisionSample) (int64, []revisionSample) {
	samples = append(samples, revisionSample{at: now, rev: cur})
	target := int64(-1) // no constraint yet
	limit := func(rev int64) {
		if target < 0 || rev < target {
			target = rev
		}
	}
	if p.KeepRevisions > 0 {
		limit(cur - p.KeepRevisions)
	}
	if p.KeepFor > 0 {
		// The newest sample at least KeepFor old: everything up to it is
		// older than KeepFor. Samples before it are no longer needed.
		i := -1
		for j, smp := range samples {
			if now.Sub(smp.at) >= p.KeepFor {
				i = j
			}
		}
		if i < 0 {
			limit(0)
		} else {
			limit(samples[i].rev)
			samples = samples[i:]
		}
	} else {
		samples = samples[len(samples)-1:]
	}
	return max(target, 0), samples
}
