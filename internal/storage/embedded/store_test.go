package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/storage/storagetest"
)

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestReopenKeepsStateAndRevision(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	s := mustOpen(t, dir)
	a, _ := s.Create(ctx, "/k/a", []byte("a1"))
	a2, _ := s.Update(ctx, "/k/a", a, []byte("a2"))
	b, _ := s.Create(ctx, "/k/b", []byte("b1"))
	_, del, _ := s.Delete(ctx, "/k/b", b)
	if err := s.Compact(ctx, a2); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openAt(t, dir)
	if rev, _ := s.CurrentRevision(ctx); rev != del {
		t.Fatalf("revision after reopen %d, want %d", rev, del)
	}
	if c, _ := s.CompactedRevision(ctx); c != a2 {
		t.Fatalf("compacted revision after reopen %d, want %d", c, a2)
	}
	// The rebuilt index enforces preconditions.
	if _, err := s.Update(ctx, "/k/a", a, []byte("stale")); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("stale update after reopen: %v", err)
	}
	if _, err := s.Create(ctx, "/k/a", nil); !errors.Is(err, storage.ErrKeyExists) {
		t.Fatalf("create of an existing key after reopen: %v", err)
	}
	rev, err := s.Update(ctx, "/k/a", a2, []byte("a3"))
	if err != nil || rev != del+1 {
		t.Fatalf("update after reopen: rev %d err %v, want rev %d", rev, err, del+1)
	}
	// History after the compaction survived too.
	ch, err := storagetest.WatchEvents(ctx, t, s, "/k/", a2)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []int64{b, del, rev} {
		if ev := <-ch; ev.Revision != want {
			t.Fatalf("replayed revision %d, want %d", ev.Revision, want)
		}
	}
}

// mustOpen opens the store in dir with default options; the caller closes
// it (tests that reopen a directory close it themselves).
func mustOpen(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return s
}

// openAt is mustOpen with Close at cleanup.
func openAt(t testing.TB, dir string) *Store {
	t.Helper()
	s := mustOpen(t, dir)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestCompactionBoundary(t *testing.T) {
	ctx := testCtx(t)
	s := openTest(t, Options{})
	var revs []int64
	for i := range 5 {
		rev, err := s.Create(ctx, fmt.Sprintf("/k/%d", i), []byte("v"))
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, rev)
	}
	c := revs[2]
	if err := s.Compact(ctx, c); err != nil {
		t.Fatal(err)
	}
	// The log records at or below c are gone, so watching from c-1 (which
	// needs the event at c) must fail, and from c must work.
	if _, err := storagetest.WatchEvents(ctx, t, s, "/k/", c-1); !errors.Is(err, storage.ErrCompacted) {
		t.Fatalf("watch from %d after compacting at %d: %v", c-1, c, err)
	}
	if _, err := s.List(ctx, "/k/", storage.ListOptions{Revision: c - 1}); !errors.Is(err, storage.ErrCompacted) {
		t.Fatalf("list at %d after compacting at %d: %v", c-1, c, err)
	}
	res, err := s.List(ctx, "/k/", storage.ListOptions{Revision: c})
	if err != nil || len(res.KVs) != 3 {
		t.Fatalf("list at the compacted revision: %d keys, %v; want 3", len(res.KVs), err)
	}
	// Compacting backwards is a no-op; compacting the future is refused.
	if err := s.Compact(ctx, c-1); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.CompactedRevision(ctx); got != c {
		t.Fatalf("compacted revision %d after a backwards compaction, want %d", got, c)
	}
	if err := s.Compact(ctx, revs[4]+1); !errors.Is(err, storage.ErrFutureRevision) {
		t.Fatalf("compact in the future: %v", err)
	}
}

// A watcher that does not read while the committer publishes more batches
// than its buffer holds must neither block writers nor lose events: it is
// detached and catches up from the log.
func TestSlowWatcherCatchesUpFromLog(t *testing.T) {
	ctx := testCtx(t)
	s := openTest(t, Options{WatchBuffer: 2})
	start, _ := s.CurrentRevision(ctx)
	ch, err := storagetest.WatchEvents(ctx, t, s, "/k/", start)
	if err != nil {
		t.Fatal(err)
	}
	// Let the watcher go live before the writes start, so the overflow path
	// (not only the initial replay) is what delivers them.
	waitLive(t, s, 1)
	const n = 300 // far beyond WatchBuffer batches + the output buffer
	for i := range n {
		if _, err := s.Create(ctx, fmt.Sprintf("/k/%03d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("watch closed after %d events", i)
			}
			if want := start + int64(i) + 1; ev.Revision != want {
				t.Fatalf("event %d has revision %d, want %d", i, ev.Revision, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d never came", i)
		}
	}
}

// A detached watcher whose history was compacted away cannot catch up: its
// channel closes after the contiguous events it could deliver.
func TestSlowWatcherClosedByCompaction(t *testing.T) {
	ctx := testCtx(t)
	s := openTest(t, Options{WatchBuffer: 1})
	start, _ := s.CurrentRevision(ctx)
	ch, err := storagetest.WatchEvents(ctx, t, s, "/k/", start)
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	for i := range 200 {
		if last, err = s.Create(ctx, fmt.Sprintf("/k/%03d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Compact(ctx, last); err != nil {
		t.Fatal(err)
	}
	next := start + 1
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				if next > last {
					t.Fatalf("watch closed although it delivered everything")
				}
				return
			}
			if ev.Revision != next {
				t.Fatalf("event revision %d, want %d", ev.Revision, next)
			}
			next++
		case <-deadline:
			t.Fatalf("watch neither delivered everything nor closed (at %d)", next)
		}
	}
}

func TestAutomaticCompaction(t *testing.T) {
	ctx := testCtx(t)
	s := openTest(t, Options{Compaction: CompactionPolicy{Interval: 10 * time.Millisecond, KeepRevisions: 5}})
	var last int64
	var err error
	for i := range 20 {
		if last, err = s.Create(ctx, fmt.Sprintf("/k/%d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "automatic compaction", func() bool {
		c, _ := s.CompactedRevision(ctx)
		return c == last-5
	})
	if _, err := s.List(ctx, "/k/", storage.ListOptions{Revision: last - 5}); err != nil {
		t.Fatalf("list inside the kept window: %v", err)
	}
}

func TestCompactionTarget(t *testing.T) {
	t0 := time.Unix(1000, 0)
	keepFor := CompactionPolicy{Interval: time.Second, KeepFor: 3 * time.Second}
	var samples []revisionSample
	var target int64
	// One sample per second, revision 100 per second.
	for i := range 6 {
		target, samples = compactionTarget(keepFor, t0.Add(time.Duration(i)*time.Second), int64(100*i), samples)
	}
	// At t0+5s, the newest sample at least 3s old is t0+2s (revision 200).
	if target != 200 {
		t.Fatalf("KeepFor target %d, want 200", target)
	}
	if len(samples) != 4 {
		t.Fatalf("kept %d samples, want the 4 from t0+2s on", len(samples))
	}
	both := CompactionPolicy{Interval: time.Second, KeepFor: 3 * time.Second, KeepRevisions: 450}
	target, _ = compactionTarget(both, t0.Add(6*time.Second), 600, samples)
	if target != 150 {
		t.Fatalf("KeepFor+KeepRevisions target %d, want the smaller 150", target)
	}
	target, _ = compactionTarget(keepFor, t0, 50, nil)
	if target != 0 {
		t.Fatalf("target %d before any sample is old enough, want 0", target)
	}
	// Fewer revisions than KeepRevisions: nothing goes, however old.
	few := CompactionPolicy{Interval: time.Second, KeepFor: 5 * time.Second, KeepRevisions: 100_000}
	target, _ = compactionTarget(few, t0, 29837, []revisionSample{{at: t0.Add(-6 * time.Second), rev: 9879}})
	if target != 0 {
		t.Fatalf("target %d with 29837 revisions and KeepRevisions 100000, want 0", target)
	}
}

func TestGroupCommitSharesFsync(t *testing.T) {
	ctx := testCtx(t)
	var batches, writes, biggest, syncWaits atomic.Int64
	s := openTest(t, Options{OnCommit: func(n int, _ time.Duration) {
		batches.Add(1)
		writes.Add(int64(n))
		if int64(n) > biggest.Load() {
			biggest.Store(int64(n))
		}
	}, OnSyncWait: func(time.Duration) { syncWaits.Add(1) }})
	const workers, each = 64, 10
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			key := fmt.Sprintf("/k/%d", w)
			rev, err := s.Create(ctx, key, []byte("0"))
			for i := 0; i < each-1 && err == nil; i++ {
				rev, err = s.Update(ctx, key, rev, []byte("x"))
			}
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if writes.Load() != workers*each {
		t.Fatalf("OnCommit saw %d writes, want %d", writes.Load(), workers*each)
	}
	if syncWaits.Load() != batches.Load() {
		t.Fatalf("%d sync waits reported for %d batches, want one each", syncWaits.Load(), batches.Load())
	}
	if biggest.Load() < 2 {
		t.Fatalf("64 concurrent writers never shared a batch (%d batches)", batches.Load())
	}
	t.Logf("%d writes in %d batches, largest %d", writes.Load(), batches.Load(), biggest.Load())
}

func TestClose(t *testing.T) {
	ctx := testCtx(t)
	s, err := Open(t.TempDir(), Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := storagetest.WatchEvents(ctx, t, s, "/", 0)
	if err != nil {
		t.Fatal(err)
	}
	// Writers racing Close either succeed or see ErrClosed, nothing else.
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				_, err := s.Create(ctx, fmt.Sprintf("/k/%d/%d", w, i), []byte("v"))
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("write during Close: %v", err)
					return
				}
			}
		})
	}
	time.Sleep(20 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for range ch { // drains, then must be closed
	}
	if _, err := s.Get(ctx, "/k/0/0"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
	if _, err := storagetest.WatchEvents(ctx, t, s, "/", 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Watch after Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// waitLive waits until n watchers take live batches from the committer.
func waitLive(t *testing.T, s *Store, n int) {
	t.Helper()
	waitFor(t, "the watchers to go live", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.watchers) == n
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestGroupCommitIsOneWatchBatch checks that the watch hands a group
// commit's events over together: 64 writers updating at once produce fewer
// batches than events, every batch in revision order and all of them
// together every revision exactly once.
func TestGroupCommitIsOneWatchBatch(t *testing.T) {
	s := openTest(t, Options{})
	ctx := t.Context()
	start, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	batches, err := s.Watch(ctx, "/k/", start, storage.WithoutPrevValue)
	if err != nil {
		t.Fatal(err)
	}
	const writers = 64
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			if _, err := s.Create(ctx, fmt.Sprintf("/k/%02d", i), []byte("v")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	next, n := start+1, 0
	deadline := time.After(10 * time.Second)
	for next <= start+writers {
		select {
		case batch := <-batches:
			n++
			for _, ev := range batch {
				if ev.Revision != next {
					t.Fatalf("batch %d: revision %d, want %d", n, ev.Revision, next)
				}
				next++
			}
		case <-deadline:
			t.Fatalf("events up to %d of %d after 10s", next-1, start+writers)
		}
	}
	if n >= writers {
		t.Fatalf("%d concurrent writes came in %d batches: the group commit was split", writers, n)
	}
	t.Logf("%d concurrent writes came in %d batches", writers, n)
}
