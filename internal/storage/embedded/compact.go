package embedded

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/leasehold/leasehold/internal/storage"
)

// Compact implements storage.Interface: it deletes the log records at or
// below revision and records revision as compacted, in one synced batch.
// Compacting at or below the current compacted revision does nothing.
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
	b := s.db.NewBatch()
	defer b.Close()
	err := b.DeleteRange(logKey(0), logKey(revision+1), nil)
	if err == nil {
		err = b.Set(metaCompacted, encodeInt64(revision), nil)
	}
	if err == nil {
		err = b.Commit(pebble.Sync)
	}
	if err != nil {
		return fmt.Errorf("compact at %d: %w", revision, err)
	}
	s.compacted.Store(revision)
	d := time.Since(start)
	s.opts.Logger.Debug("compacted", "revision", revision, "duration", d)
	if s.opts.OnCompact != nil {
		s.opts.OnCompact(revision, d)
	}
	return nil
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
