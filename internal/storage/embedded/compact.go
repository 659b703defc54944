package embedded

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
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
	// Compaction frees space (once pebble has compacted its deletions), so
	// it goes on below the reserve, down to half of it.
	if err := s.space.check(s.space.reserve / 2); err != nil {
		return fmt.Errorf("compact at %d: %w", revision, err)
	}
	start := time.Now()
	if err := s.setSynced(metaCompacted, encodeInt64(revision)); err != nil {
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

// sweepChunk is how many revisions to delete a sweep gathers before it
// sorts them into runs (see sweepRecords): 512 KiB of revisions. A run cut
// by the end of a chunk is deleted in two parts.
const sweepChunk = 64 << 10

// minRangeRun is the shortest run of consecutive revisions a sweep deletes
// with one range deletion rather than record by record: the scattered
// records of keys written now and then stay point deletions, since every
// read of the log consults the range deletions over it.
const minRangeRun = 16

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
	// A crash here, with the compacted revision recorded and the records
	// deleted but the sweep's progress not, makes the next compaction sweep
	// the same records again. The robustness suite's build turns this
	// comment (gofail) into a failpoint.
	// gofail: var compactBeforeSweptMark struct{}
	if err == nil {
		err = s.setSynced(metaSwept, encodeInt64(revision))
	}
	if err != nil {
		return deleted, fmt.Errorf("sweep log to %d: %w", revision, err)
	}
	s.swept = revision
	return deleted, nil
}

// sweepRecords deletes, for every log record it iterates, the record it
// replaced and, for a delete, the record itself. It returns how many
// records it deleted.
//
// The revisions to delete are gathered sweepChunk at a time and deleted
// run by run (revisionRuns): a run of at least minRangeRun consecutive
// revisions, all to be deleted, goes as one range deletion, a shorter one
// record by record. Renewals make long runs: a key renewed since the last
// sweep replaced its previous renewal, and those follow each other in the
// log as the renewals do. Pebble drops the tables a range deletion covers
// whole without reading them (delete-only compactions), where it merged
// every point deletion with its record. With tableSpans, which keeps the
// deletions in tables of their own, BenchmarkRenewals100k (taskset -c 1,
// default benchtime, three runs alternating with point deletions, shared
// machine): pebble's compactions wrote 224 B per renewal instead of 287
// (write amplification 1.84 -> 1.73), cpu-µs/write 15.8, 15.7, 18.3 ->
// 14.4, 15.2, 13.1. Without tableSpans, range deletions changed neither
// (594 B per renewal). The covered records' space comes back later, when
// the table holding them is dropped or compacted: the store's disk grew
// 173 -> 218 MB in that benchmark.
//
// The deletions are committed in batches of up to sweepBatch tombstones,
// synced, as every write the store makes (writeSynced), so that a failing
// WAL is reported to a write that can recover from it; one fsync per
// batch costs a sweep little.
func (s *Store) sweepRecords(ctx context.Context, it *pebble.Iterator) (deleted int, err error) {
	b := s.db.NewBatch()
	defer func() { err = errors.Join(err, b.Close()) }()
	staged := 0 // records b deletes
	commit := func() error {
		if err := s.writeSynced(b); err != nil {
			return err
		}
		deleted += staged
		staged = 0
		b.Reset()
		return nil
	}
	revs := make([]int64, 0, sweepChunk)
	deleteRevs := func() error {
		for first, last := range revisionRuns(revs) {
			if err := stageRun(b, first, last); err != nil {
				return err
			}
			staged += int(last - first + 1)
			if b.Count() >= sweepBatch {
				if err := ctx.Err(); err != nil {
					return err
				}
				if err := commit(); err != nil {
					return err
				}
			}
		}
		revs = revs[:0]
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
			revs = append(revs, prev)
		}
		if typ == storage.EventDelete {
			revs = append(revs, rev)
		}
		if len(revs) >= sweepChunk-1 {
			if err := deleteRevs(); err != nil {
				return deleted, err
			}
		}
	}
	if err := deleteRevs(); err != nil {
		return deleted, err
	}
	if b.Empty() {
		return deleted, nil
	}
	return deleted, commit()
}

// stageRun stages into b the deletion of the log records first..last.
func stageRun(b *pebble.Batch, first, last int64) error {
	if last-first+1 >= minRangeRun {
		// Log keys are exactly logKeyLen bytes long: the range holds no
		// key but the records first..last.
		if err := b.DeleteRange(logKey(first), logKey(last+1), nil); err != nil {
			return fmt.Errorf("delete log revisions %d-%d: %w", first, last, err)
		}
		return nil
	}
	for rev := first; rev <= last; rev++ {
		if err := b.Delete(logKey(rev), nil); err != nil {
			return fmt.Errorf("delete log revision %d: %w", rev, err)
		}
	}
	return nil
}

// revisionRuns sorts revs and yields its runs of consecutive revisions, as
// (first, last), in order. A revision listed twice is yielded once.
func revisionRuns(revs []int64) iter.Seq2[int64, int64] {
	slices.Sort(revs)
	return func(yield func(first, last int64) bool) {
		for i := 0; i < len(revs); {
			j := i + 1
			for j < len(revs) && revs[j] <= revs[j-1]+1 {
				j++
			}
			if !yield(revs[i], revs[j-1]) {
				return
			}
			i = j
		}
	}
}

// setSynced writes one key as a synced batch (writeSynced).
func (s *Store) setSynced(key, value []byte) (err error) {
	b := s.db.NewBatch()
	defer func() { err = errors.Join(err, b.Close()) }()
	if err := b.Set(key, value, nil); err != nil {
		return err
	}
	return s.writeSynced(b)
}

// compactLoop is the automatic compactor, owned by the Store and stopped by
// Close. It runs at once, not only after a first Interval: with the
// samples persisted, a server restarted more often than Interval still
// compacts.
func (s *Store) compactLoop() {
	defer s.goroutines.Done()
	ticker := time.NewTicker(s.opts.Compaction.Interval)
	defer ticker.Stop()
	now := time.Now()
	for {
		if !s.compactTick(now) {
			return
		}
		select {
		case <-s.closing:
			return
		case now = <-ticker.C:
		}
	}
}

// compactTick samples the revision, persists the samples still needed and
// compacts as far as the policy allows. It returns false once the store is
// closed.
func (s *Store) compactTick(now time.Time) bool {
	target, samples := compactionTarget(s.opts.Compaction, now, s.rev.Load(), s.samples)
	if err := s.saveSamples(s.samples, samples); err != nil {
		if errors.Is(err, ErrClosed) {
			return false
		}
		s.logCompactionError("saving revision samples", err)
	} else {
		s.samples = samples
	}
	if target <= s.compacted.Load() {
		return true
	}
	err := s.Compact(context.Background(), target)
	if errors.Is(err, ErrClosed) {
		return false
	}
	if err != nil {
		s.logCompactionError("automatic compaction failed", err, "revision", target)
	}
	return true
}

// logCompactionError logs a failed compaction step; while the store
// refuses writes (Health says why), that is expected and logged at Debug
// only, not every Interval as an error.
func (s *Store) logCompactionError(msg string, err error, args ...any) {
	args = append(args, "err", err)
	if errors.Is(err, storage.ErrInsufficientStorage) || errors.Is(err, storage.ErrUnavailable) {
		s.opts.Logger.Debug(msg, args...)
		return
	}
	s.opts.Logger.Error(msg, args...)
}

// revisionSample remembers the revision at one moment, so the compactor can
// turn "keep the last KeepFor" into a revision. Samples are persisted
// (metaSamples) so that the age of history survives a restart.
type revisionSample struct {
	at  time.Time
	rev int64
}

// sampleKey is a sample's meta key: metaSamples + its time in Unix
// nanoseconds (big-endian, so samples sort by time); the value is its
// revision.
func sampleKey(at time.Time) []byte {
	return append(append([]byte{}, metaSamples...), encodeInt64(at.UnixNano())...)
}

// loadSamples reads the persisted samples, oldest first.
func loadSamples(r pebble.Reader) ([]revisionSample, error) {
	upper := append([]byte{}, metaSamples...)
	upper[len(upper)-1]++
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: metaSamples, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("iterate revision samples: %w", err)
	}
	var samples []revisionSample
	for ok := it.First(); ok; ok = it.Next() {
		at, err := decodeInt64(it.Key()[len(metaSamples):])
		if err == nil {
			var rev int64
			rev, err = decodeInt64(it.Value())
			samples = append(samples, revisionSample{at: time.Unix(0, at), rev: rev})
		}
		if err != nil {
			return nil, errors.Join(fmt.Errorf("revision sample %x: %w", it.Key(), err), it.Close())
		}
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("iterate revision samples: %w", err)
	}
	return samples, nil
}

// saveSamples replaces the persisted samples old by now, in one synced
// batch, unless they are the same. The caller holds no lock; it runs on the
// compactor goroutine, which owns the samples.
func (s *Store) saveSamples(old, now []revisionSample) (err error) {
	if slices.Equal(old, now) {
		return nil
	}
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	b := s.db.NewBatch()
	defer func() { err = errors.Join(err, b.Close()) }()
	for _, smp := range old {
		if err := b.Delete(sampleKey(smp.at), nil); err != nil {
			return err
		}
	}
	for _, smp := range now {
		if err := b.Set(sampleKey(smp.at), encodeInt64(smp.rev), nil); err != nil {
			return err
		}
	}
	return s.writeSynced(b)
}

// compactionTarget returns the newest revision the policy allows compacting
// at time now, with cur the newest revision, and the samples still needed.
// A target of 0 compacts nothing. A new sample is added only if the
// revision moved: the oldest time a revision was seen at is what ages it.
func compactionTarget(p CompactionPolicy, now time.Time, cur int64, samples []revisionSample) (int64, []revisionSample) {
	samples = slices.Clip(samples)
	if len(samples) == 0 || samples[len(samples)-1].rev != cur {
		samples = append(samples, revisionSample{at: now, rev: cur})
	}
	target := int64(-1) // no constraint yet
	limit := func(rev int64) {
		if target < 0 || rev < target {
			target = rev
		}
	}
	if p.KeepRevisions > 0 {
		// Fewer revisions than KeepRevisions: keep them all (a negative
		// bound would read as "no bound" below and let KeepFor alone decide).
		limit(max(cur-p.KeepRevisions, 0))
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
	if p.MaxRevisions > 0 {
		target = max(target, cur-p.MaxRevisions)
	}
	return max(target, 0), samples
}
