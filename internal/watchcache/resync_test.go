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

func TestRelistAfterCompactionPublishesDifferences(t *testing.T) {
	s := newStoreT(t)
	create(t, s, "a", "keep", "h", nil)
	create(t, s, "a", "change", "old", nil)
	create(t, s, "a", "gone", "h", nil)
	c := startCache(t, s, Options{})
	before := c.Revision()
	w := mustWatch(t, c, WatchOptions{FromRevision: before})

	// The cache's storage watch ends and cannot come back while the history it
	// needs is written and then compacted away.
	s.endWatches(true)
	changed := update(t, s, "a", "change", "new", nil)
	remove(t, s, "a", "gone")
	added := create(t, s, "a", "added", "h", nil)
	create(t, s, "a", "transient", "h", nil)
	final := remove(t, s, "a", "transient")
	if err := s.Compact(context.Background(), final); err != nil {
		t.Fatal(err)
	}
	s.allowWatches()

	if err := c.WaitForRevision(testCtx(t), final); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		typ watch.EventType
		key string
		rev int64
	}{
		{watch.Modified, leaseKey("a", "change"), changed},
		{watch.Added, leaseKey("a", "added"), added},
		{watch.Deleted, leaseKey("a", "gone"), final},
	}
	for _, wv := range want {
		ev := next(t, w)
		if ev.Type != wv.typ || ev.Key != wv.key || ev.Rev != wv.rev || rvOf(t, ev.Object) != wv.rev {
			t.Fatalf("got %s %s @%d (rv %d), want %s %s @%d", ev.Type, ev.Key, ev.Rev, rvOf(t, ev.Object), wv.typ, wv.key, wv.rev)
		}
	}
	expectNothing(t, w, 50*time.Millisecond)

	objs, rev := c.List(leasePrefix, nil)
	if len(objs) != 3 || rev != final {
		t.Fatalf("after re-list: %d objects at %d, want 3 at %d", len(objs), rev, final)
	}
	// The gap cannot be replayed: watches from inside it are too old.
	var tooOld *TooOldError
	if _, err := c.Watch(testCtx(t), WatchOptions{FromRevision: changed}); !errors.As(err, &tooOld) {
		t.Fatalf("watch from inside the re-listed gap: %v, want *TooOldError", err)
	}
	// And the cache keeps following the store.
	next1 := update(t, s, "a", "keep", "again", nil)
	if ev := next(t, w); ev.Type != watch.Modified || ev.Rev != next1 {
		t.Fatalf("after re-list: %s @%d, want MODIFIED @%d", ev.Type, ev.Rev, next1)
	}
}
