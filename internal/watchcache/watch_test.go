package watchcache

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/leasehold/leasehold/internal/storage"
)

// expectHistory reads len(want) events from w and checks they are exactly the
// store's history: same order, keys, revisions, types and contents.
func expectHistory(t *testing.T, w *Watcher, want []storage.Event) {
	t.Helper()
	for i, sev := range want {
		ev := nextNonBookmark(t, w)
		wantType := watch.Modified
		switch {
		case sev.Type == storage.EventDelete:
			wantType = watch.Deleted
		case sev.CreateRevision == sev.Revision:
			wantType = watch.Added
		}
		if ev.Type != wantType || ev.Key != sev.Key || ev.Rev != sev.Revision {
			t.Fatalf("event %d = %s %s @%d, want %s %s @%d", i, ev.Type, ev.Key, ev.Rev, wantType, sev.Key, sev.Revision)
		}
		if rvOf(t, ev.Object) != sev.Revision {
			t.Fatalf("event %d: object resourceVersion %d, want %d", i, rvOf(t, ev.Object), sev.Revision)
		}
		value := sev.Value
		if sev.Type == storage.EventDelete {
			value = sev.PrevValue
		}
		wantObj, _ := decodeLease(sev.Key, value, sev.Revision, nil)
		if holderOf(ev.Object) != holderOf(wantObj) {
			t.Fatalf("event %d: holder %q, want %q", i, holderOf(ev.Object), holderOf(wantObj))
		}
	}
	expectNothing(t, w, 50*time.Millisecond)
}

func TestWatchDeliversEveryChangeInOrderUnderConcurrentWriters(t *testing.T) {
	onEachBackend(t, testWatchDeliversEveryChangeInOrderUnderConcurrentWriters)
}

func testWatchDeliversEveryChangeInOrderUnderConcurrentWriters(t *testing.T, s storage.Interface) {
	create(t, s, "ns0", "seed", "h", nil)
	// Nobody reads until the writers finish, which under a loaded machine
	// (the race detector, other packages' tests) takes longer than the
	// default slow-watcher timeout: this test is about order, not slowness.
	c := startCache(t, s, Options{WatcherBuffer: 8, SlowWatcherTimeout: time.Minute})
	start := c.Revision()
	fromStart := mustWatch(t, c, WatchOptions{FromRevision: start})
	fromNow := mustWatch(t, c, WatchOptions{}) // FromRevision 0: changes from now on

	const writers, ops = 6, 150
	var wg sync.WaitGroup
	var midRev int64
	var midOnce sync.Once
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ns := fmt.Sprintf("ns%d", i%3)
			for j := range ops {
				name := fmt.Sprintf("w%d-%d", i, j%10)
				switch {
				case j < 10:
					create(t, s, ns, name, "h0", nil)
				case j%7 == 0:
					remove(t, s, ns, name)
					create(t, s, ns, name, fmt.Sprint("r", j), nil)
				default:
					update(t, s, ns, name, fmt.Sprint("h", j), nil)
				}
				// Everyone also fights over one shared key.
				update(t, s, "ns0", "seed", fmt.Sprint(i, "-", j), nil)
				if i == 0 && j == ops/2 {
					midOnce.Do(func() { midRev = c.Revision() })
				}
			}
		}()
	}
	wg.Wait()
	mid := mustWatch(t, c, WatchOptions{FromRevision: midRev})
	ns1 := mustWatch(t, c, WatchOptions{FromRevision: start, Prefix: leasePrefix + "ns1/"})

	expectHistory(t, fromStart, history(t, s, leasePrefix, start))
	expectHistory(t, fromNow, history(t, s, leasePrefix, start))
	expectHistory(t, mid, history(t, s, leasePrefix, midRev))
	expectHistory(t, ns1, history(t, s, leasePrefix+"ns1/", start))
}

func TestWatchTooOldAndOldestRevision(t *testing.T) {
	onEachBackend(t, testWatchTooOldAndOldestRevision)
}

func testWatchTooOldAndOldestRevision(t *testing.T, s storage.Interface) {
	c := startCache(t, s, Options{Window: 10})
	listRev := c.Revision()
	if got := c.OldestRevision(); got != listRev+1 {
		t.Fatalf("OldestRevision() before any event = %d, want %d", got, listRev+1)
	}
	var revs []int64
	for i := range 25 {
		revs = append(revs, create(t, s, "a", fmt.Sprint("l", i), "h", nil))
	}
	if err := c.WaitForRevision(testCtx(t), revs[24]); err != nil {
		t.Fatal(err)
	}
	// 25 events, 10 kept: revs[15..24]; the last evicted is revs[14].
	if got := c.OldestRevision(); got != revs[15] {
		t.Fatalf("OldestRevision() = %d, want %d", got, revs[15])
	}

	_, err := c.Watch(testCtx(t), WatchOptions{FromRevision: revs[13]})
	var tooOld *TooOldError
	if !errors.As(err, &tooOld) {
		t.Fatalf("watch from an evicted revision: err = %v, want *TooOldError", err)
	}
	wantMsg := fmt.Sprintf("too old resource version: %d (%d)", revs[13], revs[14])
	if tooOld.Error() != wantMsg {
		t.Fatalf("message %q, want %q", tooOld.Error(), wantMsg)
	}

	// The oldest startable revision still replays the whole window.
	w := mustWatch(t, c, WatchOptions{FromRevision: revs[14]})
	expectHistory(t, w, history(t, s, leasePrefix, revs[14]))
}

func TestWatchTooNew(t *testing.T) {
	onEachBackend(t, testWatchTooNew)
}

func testWatchTooNew(t *testing.T, s storage.Interface) {
	c := startCache(t, s, Options{TooNewWait: 100 * time.Millisecond})
	cur := c.Revision()

	_, err := c.Watch(testCtx(t), WatchOptions{FromRevision: cur + 100})
	var tooNew *TooNewError
	if !errors.As(err, &tooNew) || tooNew.Requested != cur+100 || tooNew.Current != cur {
		t.Fatalf("err = %v, want *TooNewError{%d, %d}", err, cur+100, cur)
	}
	if !strings.HasPrefix(tooNew.Error(), "Too large resource version") {
		t.Fatalf("message %q", tooNew.Error())
	}

	// A revision written while Watch waits is fine.
	c2 := startCache(t, s, Options{TooNewWait: 5 * time.Second})
	type result struct {
		w   *Watcher
		err error
	}
	res := make(chan result, 1)
	go func() {
		w, err := c2.Watch(testCtx(t), WatchOptions{FromRevision: cur + 1})
		res <- result{w, err}
	}()
	time.Sleep(20 * time.Millisecond)
	create(t, s, "a", "x", "h", nil)
	second := create(t, s, "a", "y", "h", nil)
	r := <-res
	if r.err != nil {
		t.Fatalf("watch from a revision reached while waiting: %v", r.err)
	}
	defer r.w.Stop()
	if ev := next(t, r.w); ev.Rev != second {
		t.Fatalf("first event rev %d, want %d (changes after %d only)", ev.Rev, second, cur+1)
	}
}

func TestWatchInitialState(t *testing.T) {
	onEachBackend(t, testWatchInitialState)
}

func testWatchInitialState(t *testing.T, s storage.Interface) {
	for _, name := range []string{"c", "a", "b"} {
		create(t, s, "ns", name, "h-"+name, nil)
	}
	create(t, s, "other", "z", "h", nil)
	c := startCache(t, s, Options{})
	snap := c.Revision()

	w := mustWatch(t, c, WatchOptions{Prefix: leasePrefix + "ns/", InitialState: true, Bookmarks: true})
	if w.InitialEventsEnd() != snap {
		t.Fatalf("InitialEventsEnd() = %d, want %d", w.InitialEventsEnd(), snap)
	}
	for _, name := range []string{"a", "b", "c"} {
		ev := next(t, w)
		if ev.Type != watch.Added || ev.Key != leaseKey("ns", name) || holderOf(ev.Object) != "h-"+name {
			t.Fatalf("initial event = %s %s, want ADDED %s", ev.Type, ev.Key, leaseKey("ns", name))
		}
		if ev.Rev != rvOf(t, ev.Object) {
			t.Fatalf("initial event rev %d, object rv %d", ev.Rev, rvOf(t, ev.Object))
		}
	}
	end := next(t, w)
	if end.Type != watch.Bookmark || !end.InitialEventsEnd || end.Rev != snap || end.Object != nil {
		t.Fatalf("after the initial events: %+v, want the initial-events-end bookmark at %d", end, snap)
	}
	rev := update(t, s, "ns", "b", "new", nil)
	if ev := next(t, w); ev.Type != watch.Modified || ev.Rev != rev || holderOf(ev.Object) != "new" {
		t.Fatalf("change after the snapshot: %s @%d, want MODIFIED @%d", ev.Type, ev.Rev, rev)
	}

	// Without Bookmarks there is no flagged bookmark; the revision is still exposed.
	plain := mustWatch(t, c, WatchOptions{Prefix: leasePrefix + "other/", InitialState: true})
	if ev := next(t, plain); ev.Type != watch.Added || ev.Key != leaseKey("other", "z") {
		t.Fatalf("initial event %s %s", ev.Type, ev.Key)
	}
	expectNothing(t, plain, 50*time.Millisecond)
	if plain.InitialEventsEnd() != rev {
		t.Fatalf("InitialEventsEnd() = %d, want %d", plain.InitialEventsEnd(), rev)
	}
}

func TestWatchPredicateTransitions(t *testing.T) {
	onEachBackend(t, testWatchPredicateTransitions)
}

func testWatchPredicateTransitions(t *testing.T, s storage.Interface) {
	predicateTransitions(t, s, Options{})
}

// TestWatchPredicateTransitionsWithoutPreviousStates runs the same
// transitions with SameSelection: watchers see the same events, and the
// window keeps a previous state only where the labels changed.
func TestWatchPredicateTransitionsWithoutPreviousStates(t *testing.T) {
	onEachBackend(t, func(t *testing.T, s storage.Interface) {
		sameLabels := func(_ string, prev, obj runtime.Object) bool {
			return maps.Equal(prev.(metav1.Object).GetLabels(), obj.(metav1.Object).GetLabels())
		}
		c := predicateTransitions(t, s, Options{SameSelection: sameLabels})
		kept := map[string]bool{}
		c.mu.RLock()
		for seq := c.events.oldestSeq(); seq < c.events.next; seq++ {
			if e := c.events.at(seq); e.typ == watch.Modified && e.key == leaseKey("a", "x") {
				kept[holderOf(e.obj)] = e.prev != nil
				if e.prevSame == (e.prev != nil) {
					t.Errorf("update to %s: prevSame %v with prev %v", holderOf(e.obj), e.prevSame, e.prev)
				}
			}
		}
		c.mu.RUnlock()
		want := map[string]bool{"h": true, "h2": false, "h3": true, "h4": false}
		if !maps.Equal(kept, want) {
			t.Fatalf("previous state kept per update: %v, want %v", kept, want)
		}
	})
}

func predicateTransitions(t *testing.T, s storage.Interface, opts Options) *Cache {
	c := startCache(t, s, opts)
	hot := map[string]string{"tier": "hot"}
	cold := map[string]string{"tier": "cold"}
	pred := func(o runtime.Object) bool {
		return o.(interface{ GetLabels() map[string]string }).GetLabels()["tier"] == "hot"
	}
	w := mustWatch(t, c, WatchOptions{Predicate: pred})

	expect := func(typ watch.EventType, rev int64, label string) {
		t.Helper()
		ev := next(t, w)
		got := ev.Object.(interface{ GetLabels() map[string]string }).GetLabels()["tier"]
		if ev.Type != typ || ev.Rev != rev || got != label || rvOf(t, ev.Object) != rev {
			t.Fatalf("got %s @%d tier=%s rv=%d, want %s @%d tier=%s", ev.Type, ev.Rev, got, rvOf(t, ev.Object), typ, rev, label)
		}
	}
	create(t, s, "a", "x", "h", cold) // never matched: nothing
	r := update(t, s, "a", "x", "h", hot)
	expect(watch.Added, r, "hot") // starts matching
	r = update(t, s, "a", "x", "h2", hot)
	expect(watch.Modified, r, "hot")
	r = update(t, s, "a", "x", "h3", cold)
	expect(watch.Deleted, r, "cold") // stops matching: DELETED with the new state
	update(t, s, "a", "x", "h4", cold)
	remove(t, s, "a", "x") // deleted while not matching: nothing
	r = create(t, s, "a", "y", "h", hot)
	expect(watch.Added, r, "hot")
	r = remove(t, s, "a", "y")
	expect(watch.Deleted, r, "hot") // last state, deletion's revision
	expectNothing(t, w, 50*time.Millisecond)
	return c
}

func TestSlowWatcherIsClosedWhileOthersContinue(t *testing.T) {
	onEachBackend(t, testSlowWatcherIsClosedWhileOthersContinue)
}

func testSlowWatcherIsClosedWhileOthersContinue(t *testing.T, s storage.Interface) {
	create(t, s, "a", "x", "h", nil)
	var mu sync.Mutex
	var counts []int
	c := startCache(t, s, Options{Window: 20, WatcherBuffer: 1, OnWatchersChanged: func(n int) {
		mu.Lock()
		counts = append(counts, n)
		mu.Unlock()
	}})
	start := c.Revision()
	slow := mustWatch(t, c, WatchOptions{FromRevision: start})
	fast := mustWatch(t, c, WatchOptions{FromRevision: start})

	// The writer waits for the fast watcher after each write (a tiny window
	// would otherwise outrun even it), while the slow one never reads.
	const writes = 200
	var last int64
	for i := range writes {
		last = update(t, s, "a", "x", fmt.Sprint(i), nil)
		if ev := next(t, fast); ev.Rev != last {
			t.Fatalf("fast watcher: event @%d, want @%d", ev.Rev, last)
		}
	}

	// The slow one gets a gap-free prefix of the history, then its channel closes.
	prev := start
	for ev := range slow.Events() {
		if ev.Rev != prev+1 {
			t.Fatalf("slow watcher: event @%d after @%d", ev.Rev, prev)
		}
		prev = ev.Rev
	}
	if prev >= last {
		t.Fatalf("slow watcher received everything (up to %d); it should have been closed", prev)
	}
	slow.Stop()
	fast.Stop()
	mu.Lock()
	defer mu.Unlock()
	if len(counts) != 4 || counts[1] != 2 || counts[3] != 0 {
		t.Fatalf("OnWatchersChanged calls %v, want 1,2 then down to 0", counts)
	}
}

func TestBookmarksFollowTheEventsTheyCover(t *testing.T) {
	onEachBackend(t, testBookmarksFollowTheEventsTheyCover)
}

func testBookmarksFollowTheEventsTheyCover(t *testing.T, s storage.Interface) {
	c := startCache(t, s, Options{BookmarkInterval: 20 * time.Millisecond})
	withBM := mustWatch(t, c, WatchOptions{Bookmarks: true})
	without := mustWatch(t, c, WatchOptions{})

	var lastRev int64
	for i := range 5 {
		lastRev = create(t, s, "a", fmt.Sprint("l", i), "h", nil)
	}
	seen := int64(0)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		ev := next(t, withBM)
		if ev.Type == watch.Bookmark {
			if ev.Rev < seen {
				t.Fatalf("bookmark @%d after an event @%d", ev.Rev, seen)
			}
			if ev.Object != nil || ev.InitialEventsEnd {
				t.Fatalf("bookmark %+v", ev)
			}
			if ev.Rev == lastRev {
				break
			}
			continue
		}
		if ev.Rev <= seen {
			t.Fatalf("event @%d after @%d", ev.Rev, seen)
		}
		seen = ev.Rev
	}
	if seen != lastRev {
		t.Fatalf("saw events up to %d, want %d", seen, lastRev)
	}
	for range 5 {
		if ev := next(t, without); ev.Type == watch.Bookmark {
			t.Fatal("bookmark delivered to a watcher that did not ask")
		}
	}
	expectNothing(t, without, 60*time.Millisecond)
}

func TestWatcherEndsWithContextStopAndCache(t *testing.T) {
	s := newStoreT(t)
	c := New(s, Options{Prefix: "/registry/", Decode: decodeLease, Logger: quietLogger()})
	runCtx, stopRun := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(runCtx) }()
	if err := c.WaitReady(testCtx(t)); err != nil {
		t.Fatal(err)
	}

	wctx, cancel := context.WithCancel(context.Background())
	byCtx, err := c.Watch(wctx, WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byStop := mustWatch(t, c, WatchOptions{})
	byCache := mustWatch(t, c, WatchOptions{})

	cancel()
	if _, err := nextErr(byCtx, 5*time.Second); !errors.Is(err, errClosed) {
		t.Fatalf("after ctx end: %v, want closed", err)
	}
	byStop.Stop()
	byStop.Stop() // idempotent
	if _, err := nextErr(byStop, 5*time.Second); !errors.Is(err, errClosed) {
		t.Fatalf("after Stop: %v, want closed", err)
	}
	stopRun()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := nextErr(byCache, 5*time.Second); !errors.Is(err, errClosed) {
		t.Fatalf("after the cache stopped: %v, want closed", err)
	}
	if err := c.Run(context.Background()); err == nil {
		t.Fatal("second Run succeeded")
	}
	if _, err := c.Watch(testCtx(t), WatchOptions{}); err == nil {
		t.Fatal("Watch on a stopped cache succeeded")
	}
}
