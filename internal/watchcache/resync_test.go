package watchcache

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

func TestRewatchAfterStorageWatchEnds(t *testing.T) {
	s := newStoreT(t)
	c := startCache(t, s, Options{})
	start := c.Revision()
	w := mustWatch(t, c, WatchOptions{FromRevision: start})

	for round := range 3 {
		for i := range 20 {
			create(t, s, fmt.Sprint("r", round), fmt.Sprint("l", i), "h", nil)
		}
		// The driver ends the watch; the cache must resume from where it was.
		s.endWatches(false)
	}
	last := create(t, s, "final", "l", "h", nil)
	if err := c.WaitForRevision(testCtx(t), last); err != nil {
		t.Fatal(err)
	}
	expectHistory(t, w, history(t, s, leasePrefix, start))
}

// A re-list after compaction applies the differences to the cache but ends
// the watchers instead of feeding them the differences: the events of the
// gap are gone, and a watcher given only their sum would skip changes
// without being told (the robustness suite's partition fault found an API
// watch that jumped from the last event before the gap to the re-list's).
// Its client re-watches from the last revision it saw and is told it is
// too old (410), as with kube-apiserver's cacher.
func TestRelistAfterCompactionEndsWatchers(t *testing.T) {
	s := newStoreT(t)
	create(t, s, "a", "keep", "h", nil)
	create(t, s, "a", "change", "old", nil)
	create(t, s, "a", "gone", "h", nil)
	c := startCache(t, s, Options{})
	before := c.Revision()
	w := mustWatch(t, c, WatchOptions{FromRevision: before})
	initial := mustWatch(t, c, WatchOptions{InitialState: true, Bookmarks: true})
	for range 4 { // three objects and the end of the initial events
		next(t, initial)
	}

	// The cache's storage watch ends and cannot come back while the history it
	// needs is written and then compacted away.
	s.endWatches(true)
	update(t, s, "a", "change", "new", nil)
	remove(t, s, "a", "gone")
	create(t, s, "a", "added", "h", nil)
	create(t, s, "a", "transient", "h", nil)
	final := remove(t, s, "a", "transient")
	if err := s.Compact(context.Background(), final); err != nil {
		t.Fatal(err)
	}
	s.allowWatches()

	if err := c.WaitForRevision(testCtx(t), final); err != nil {
		t.Fatal(err)
	}
	for name, w := range map[string]*Watcher{"from a revision": w, "with the initial state": initial} {
		for {
			ev, err := nextErr(w, 5*time.Second)
			if errors.Is(err, errClosed) {
				break
			}
			if err != nil {
				t.Fatalf("watcher %s after the re-list: %v, want its channel closed", name, err)
			}
			if ev.Type != watch.Bookmark {
				t.Fatalf("watcher %s after the re-list: %s %s @%d, want no event and its channel closed", name, ev.Type, ev.Key, ev.Rev)
			}
		}
	}

	objs, rev := c.List(leasePrefix, nil)
	if len(objs) != 3 || rev != final {
		t.Fatalf("after re-list: %d objects at %d, want 3 at %d", len(objs), rev, final)
	}
	// The gap cannot be replayed: a watch from the last revision before it,
	// where the ended watcher's client resumes, or from inside it, is too old.
	var tooOld *TooOldError
	for _, from := range []int64{before, before + 1, final - 1} {
		if _, err := c.Watch(testCtx(t), WatchOptions{FromRevision: from}); !errors.As(err, &tooOld) {
			t.Fatalf("watch from %d, in the re-listed gap (%d, %d]: %v, want *TooOldError", from, before, final, err)
		}
	}
	// A watch from the re-list's revision follows the store from there.
	after := mustWatch(t, c, WatchOptions{FromRevision: final})
	next1 := update(t, s, "a", "keep", "again", nil)
	if ev := next(t, after); ev.Type != watch.Modified || ev.Rev != next1 {
		t.Fatalf("after re-list: %s @%d, want MODIFIED @%d", ev.Type, ev.Rev, next1)
	}
}
