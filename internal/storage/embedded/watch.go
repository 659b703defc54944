package embedded

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/leasehold/leasehold/internal/storage"
)

// watchOutBuffer smooths delivery to the caller, in batches; the real
// buffering against a slow caller is the live channel (Options.WatchBuffer
// batches).
const watchOutBuffer = 16

// replayBatch caps the events of the log one replayed batch carries, so a
// watcher catching up on a long history gets it in bounded slices.
const replayBatch = 256

// errReopening ends a replay whose snapshot belongs to a DB being reopened.
var errReopening = errors.New("the store is reopening its files")

// watcher identifies one Watch call in Store.watchers.
type watcher struct {
	prefix string
	// prev says the caller wants Event.PrevValue filled.
	prev bool
}

// Watch implements storage.Interface. A live batch is one group commit's
// events under the prefix; a replayed one at most replayBatch events of the
// log. The batches and their byte slices are shared between watchers:
// callers must not modify them.
func (s *Store) Watch(ctx context.Context, prefix string, fromRevision int64, opts ...storage.WatchOption) (<-chan []storage.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if fromRevision < 0 {
		return nil, fmt.Errorf("watch %s from negative revision %d", prefix, fromRevision)
	}
	if err := s.acquire(); err != nil {
		return nil, err
	}
	if c := s.compacted.Load(); fromRevision < c {
		s.release()
		return nil, fmt.Errorf("watch %s from revision %d, compacted at %d: %w", prefix, fromRevision, c, storage.ErrCompacted)
	}
	// Added while holding lifecycle, so Close's Wait cannot have started.
	s.goroutines.Add(1)
	s.release()
	out := make(chan []storage.Event, watchOutBuffer)
	go s.runWatcher(ctx, &watcher{prefix: prefix, prev: storage.WantsPrevValue(opts)}, fromRevision, out)
	return out, nil
}

// runWatcher alternates between two phases until ctx ends or the store
// closes: replay from the log until caught up with the committer, then take
// live batches from it. last is the newest revision already examined, so
// whichever phase runs next resumes exactly after it.
func (s *Store) runWatcher(ctx context.Context, w *watcher, last int64, out chan<- []storage.Event) {
	defer s.goroutines.Done()
	defer close(out)
	log := s.opts.Logger.With("prefix", w.prefix)
	for {
		var err error
		last, err = s.replay(ctx, w, last, out)
		if errors.Is(err, errReopening) {
			continue // replay from the reopened DB
		}
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, ErrClosed) {
				log.Warn("watch ended during replay; the caller must re-watch", "revision", last, "err", err)
			}
			return
		}
		live, ok := s.goLive(w, last)
		if !ok {
			continue // the committer moved on while we replayed
		}
		var stop bool
		last, stop = s.follow(ctx, w, live, last, out)
		if stop {
			s.detach(w)
			return
		}
		log.Debug("watcher fell behind; catching up from the log", "revision", last)
	}
}

// goLive registers w for live batches if no batch after last has been
// published yet. Checking and registering under mu, which publish holds, is
// what makes the switch gapless.
func (s *Store) goLive(w *watcher, last int64) (chan []storage.Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rev.Load() > last {
		return nil, false
	}
	live := make(chan []storage.Event, s.opts.WatchBuffer)
	s.watchers[w] = live
	if w.prev {
		s.prevWatchers++
	}
	return live, true
}

func (s *Store) detach(w *watcher) {
	s.mu.Lock()
	s.removeLocked(w)
	s.mu.Unlock()
}

// removeLocked forgets a live watcher; the caller holds mu.
func (s *Store) removeLocked(w *watcher) {
	if _, ok := s.watchers[w]; ok && w.prev {
		s.prevWatchers--
	}
	delete(s.watchers, w)
}

// follow delivers live batches until live is closed by publish (the watcher
// overflowed: stop=false, go back to replay) or the watch ends (stop=true).
// A batch whose events all fall under the watcher's prefix and after last
// (the common case: the watch cache watches every key) is passed on as it
// is, shared with the other watchers; otherwise the watcher's part of it is
// copied out.
func (s *Store) follow(ctx context.Context, w *watcher, live <-chan []storage.Event, last int64, out chan<- []storage.Event) (int64, bool) {
	for {
		select {
		case batch, ok := <-live:
			if !ok {
				return last, false
			}
			mine := batch
			if !wholeBatch(batch, w.prefix, last) {
				mine = nil
				for _, ev := range batch {
					// A batch committed while we replayed can overlap the replay.
					if ev.Revision > last && strings.HasPrefix(ev.Key, w.prefix) {
						mine = append(mine, ev)
					}
				}
			}
			if n := len(batch); n > 0 {
				last = max(last, batch[n-1].Revision)
			}
			if len(mine) == 0 {
				continue
			}
			select {
			case out <- mine:
			case <-ctx.Done():
				return last, true
			case <-s.closing:
				return last, true
			}
		case <-ctx.Done():
			return last, true
		case <-s.closing:
			return last, true
		}
	}
}

// wholeBatch reports whether every event of batch is under prefix and after
// last, so a watcher may take the batch as it is.
func wholeBatch(batch []storage.Event, prefix string, last int64) bool {
	if len(batch) == 0 || batch[0].Revision <= last {
		return false
	}
	for i := range batch {
		if !strings.HasPrefix(batch[i].Key, prefix) {
			return false
		}
	}
	return true
}

// publish makes rev the acknowledged revision and hands the batch's events
// to every live watcher without ever blocking: a watcher whose buffer is
// full is detached (its channel closed) and catches up from the log.
// prevRevs[i] is the revision events[i] replaced (0 for a create).
//
// Events carry the previous values the committer had at hand; the others are
// read back from the log here, and only while a live watcher wants them
// (the watch cache does not). Reading under mu, before rev is published,
// keeps a compaction from sweeping them first.
func (s *Store) publish(rev int64, events []storage.Event, prevRevs []int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prevWatchers > 0 {
		if err := s.fillPrevValues(events, prevRevs); err != nil {
			// Those watchers replay from the log, where the same read
			// fails and ends their watch with the error logged.
			s.opts.Logger.Error("reading previous values for watchers", "revision", rev, "err", err)
			for w, live := range s.watchers {
				if w.prev {
					s.removeLocked(w)
					close(live)
				}
			}
		}
	}
	s.rev.Store(rev)
	for w, live := range s.watchers {
		select {
		case live <- events:
		default:
			s.removeLocked(w)
			close(live)
		}
	}
}

func (s *Store) fillPrevValues(events []storage.Event, prevRevs []int64) error {
	for i := range events {
		if events[i].PrevValue != nil || prevRevs[i] == 0 {
			continue
		}
		rec := logRecord{key: events[i].Key, prevModRev: prevRevs[i]}
		if err := withPrevValue(s.db, &rec); err != nil {
			return err
		}
		events[i].PrevValue = rec.prevValue
	}
	return nil
}

// replay sends the logged events under prefix with revisions after `after`,
// up to the newest durable revision, and returns that revision. It reads one
// pebble snapshot, so a concurrent compaction either happened entirely before
// (ErrCompacted) or not at all.
func (s *Store) replay(ctx context.Context, w *watcher, after int64, out chan<- []storage.Event) (int64, error) {
	prefix := w.prefix
	if err := s.acquire(); err != nil {
		return after, err
	}
	// Only acknowledged revisions are replayed (see Get); the snapshot,
	// taken after, holds them.
	acked := s.rev.Load()
	abort := s.abortReplays
	s.replays.Add(1)
	snap := s.db.NewSnapshot()
	s.release()
	defer s.replays.Done()
	defer snap.Close()

	compacted, err := readMeta(snap, metaCompacted)
	if err != nil {
		return after, err
	}
	if after < compacted {
		return after, fmt.Errorf("replay from %d, compacted at %d: %w", after, compacted, storage.ErrCompacted)
	}
	head := acked
	if head <= after {
		return after, nil
	}
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: logKey(after + 1), UpperBound: logKey(head + 1)})
	if err != nil {
		return after, fmt.Errorf("iterate log: %w", err)
	}
	defer it.Close()
	next := after + 1
	var batch []storage.Event
	// send passes the batch on; after moves only past events sent, so a
	// replay that ends early resumes exactly after the last one delivered.
	send := func(upTo int64) error {
		if len(batch) > 0 {
			select {
			case out <- batch:
			case <-ctx.Done():
				return ctx.Err()
			case <-s.closing:
				return ErrClosed
			case <-abort:
				return errReopening
			}
			batch = nil
		}
		after = upTo
		return nil
	}
	seen := after
	for ok := it.First(); ok; ok = it.Next() {
		rev, err := decodeLogKey(it.Key())
		if err != nil {
			return after, err
		}
		if rev != next {
			return after, fmt.Errorf("log jumps from %d to %d: %w", next-1, rev, errCorrupt)
		}
		rec, err := decodeLogRecord(it.Value())
		if err != nil {
			return after, fmt.Errorf("log revision %d: %w", rev, err)
		}
		if strings.HasPrefix(rec.key, prefix) {
			if w.prev {
				if err := withPrevValue(snap, &rec); err != nil {
					return after, fmt.Errorf("log revision %d: %w", rev, err)
				}
			}
			batch = append(batch, rec.event(rev))
			if len(batch) == replayBatch {
				if err := send(rev); err != nil {
					return after, err
				}
			}
		}
		seen = rev
		next++
	}
	if err := it.Error(); err != nil {
		return after, fmt.Errorf("iterate log: %w", err)
	}
	if err := send(seen); err != nil {
		return after, err
	}
	if after != head {
		return after, fmt.Errorf("log ends at %d, store at %d: %w", after, head, errCorrupt)
	}
	return after, nil
}
