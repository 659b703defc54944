package watchcache

import (
	"fmt"
	"testing"
	"time"
)

// A watcher whose reader stops reading is closed once its buffer has stayed
// full for SlowWatcherTimeout, with history to spare in the window (it is
// not a window behind), while a watcher that reads keeps receiving.
func TestWatcherWithFullBufferIsClosedWithinTheBound(t *testing.T) {
	s := newStoreT(t)
	create(t, s, "a", "x", "h", nil)
	const bound = 200 * time.Millisecond
	c := startCache(t, s, Options{WatcherBuffer: 4, SlowWatcherTimeout: bound})
	start := c.Revision()
	stuck := mustWatch(t, c, WatchOptions{FromRevision: start})
	reader := mustWatch(t, c, WatchOptions{FromRevision: start})

	// More events than the stuck watcher's buffer holds.
	var last int64
	for i := range 10 {
		last = update(t, s, "a", "x", fmt.Sprint(i), nil)
		if ev := next(t, reader); ev.Rev != last {
			t.Fatalf("reader: event @%d, want @%d", ev.Rev, last)
		}
	}
	began := time.Now()
	deadline := began.Add(10 * bound)
	for c.TerminatedWatchers() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("stuck watcher still open %v after its buffer filled (bound %v)", time.Since(began), bound)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := c.watchers.Load(); n != 1 {
		t.Fatalf("%d watchers open, want only the reader", n)
	}

	// The reader is unaffected.
	last = update(t, s, "a", "x", "after", nil)
	if ev := next(t, reader); ev.Rev != last {
		t.Fatalf("reader after the close: event @%d, want @%d", ev.Rev, last)
	}
	// The stuck watcher's channel holds a gap-free prefix, then closes.
	got := 0
	prev := start
	for ev := range stuck.Events() {
		if ev.Rev != prev+1 {
			t.Fatalf("stuck watcher: event @%d after @%d", ev.Rev, prev)
		}
		prev = ev.Rev
		got++
	}
	if got != 4 {
		t.Fatalf("stuck watcher kept %d events, want its buffer (4)", got)
	}
}

// A slow reader that takes less than the bound between reads is not closed.
func TestWatcherReadingWithinTheBoundStaysOpen(t *testing.T) {
	s := newStoreT(t)
	create(t, s, "a", "x", "h", nil)
	const bound = 300 * time.Millisecond
	c := startCache(t, s, Options{WatcherBuffer: 1, SlowWatcherTimeout: bound})
	w := mustWatch(t, c, WatchOptions{FromRevision: c.Revision()})
	var revs []int64
	for i := range 5 {
		revs = append(revs, update(t, s, "a", "x", fmt.Sprint(i), nil))
	}
	for _, want := range revs {
		time.Sleep(bound / 4)
		if ev := next(t, w); ev.Rev != want {
			t.Fatalf("event @%d, want @%d", ev.Rev, want)
		}
	}
	if n := c.TerminatedWatchers(); n != 0 {
		t.Fatalf("%d watchers terminated, want 0", n)
	}
}

// A watch with initial state whose reader never reads ends within the bound
// too, dropping the snapshot it held.
func TestInitialStateWatcherThatNeverReadsIsClosed(t *testing.T) {
	s := newStoreT(t)
	for i := range 20 {
		create(t, s, "a", fmt.Sprintf("l%02d", i), "h", nil)
	}
	const bound = 100 * time.Millisecond
	c := startCache(t, s, Options{WatcherBuffer: 2, SlowWatcherTimeout: bound})
	w := mustWatch(t, c, WatchOptions{InitialState: true})
	deadline := time.Now().Add(10 * bound)
	for c.TerminatedWatchers() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("initial-state watcher not closed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	n := 0
	for range w.Events() {
		n++
	}
	if n != 2 {
		t.Fatalf("%d buffered initial events, want 2", n)
	}
}
