package watchcache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// EventType is the Kubernetes watch event type: watch.Added, watch.Modified,
// watch.Deleted or watch.Bookmark.
type EventType = watch.EventType

// Event is one change as a watcher sees it.
type Event struct {
	Type EventType
	Key  string
	// Object is the new state (the last state for DELETED), shared and
	// immutable: DeepCopy before changing it. Nil for BOOKMARK.
	Object runtime.Object
	// Rev is the revision of the change; for BOOKMARK, the revision every
	// earlier event of this watch is delivered up to.
	Rev int64
	// InitialEventsEnd marks the BOOKMARK sent right after the initial ADDED
	// events of a watch with InitialState and Bookmarks: the API layer turns it
	// into the bookmark annotated k8s.io/initial-events-end: "true".
	InitialEventsEnd bool
}

// WatchOptions selects what a watcher receives.
type WatchOptions struct {
	// Prefix limits the watch to keys starting with it ("" = everything cached).
	Prefix string
	// FromRevision: deliver changes with revision > FromRevision. 0 means the
	// cache's current revision (no history). With InitialState it is a lower
	// bound for the snapshot revision instead.
	FromRevision int64
	// InitialState first sends an ADDED event for every current matching
	// object in key order, as of a snapshot revision >= FromRevision, then the
	// changes after that snapshot.
	InitialState bool
	// Predicate selects objects (nil = all). An object that stops matching is
	// sent as DELETED (with its new state), one that starts matching as ADDED.
	// It runs on the watcher's goroutine and must not mutate the object.
	Predicate func(runtime.Object) bool
	// Bookmarks asks for BOOKMARK events every Options.BookmarkInterval, and,
	// with InitialState, one flagged InitialEventsEnd after the initial events.
	Bookmarks bool
}

// readBatch bounds the events a watcher copies out of the window per lock
// acquisition, so one watcher catching up never holds the lock for long.
const readBatch = 256

// Watcher is one subscription. Read Events until it closes; call Stop when done.
type Watcher struct {
	c        *Cache
	opts     WatchOptions
	out      chan Event
	stop     chan struct{}
	stopOnce sync.Once
	exited   chan struct{}

	initial    []entry // snapshot to send first (InitialState)
	initialEnd int64   // revision of that snapshot
	cursor     uint64  // sequence number of the next window event to read
	relists    uint64  // the cache's re-lists when it started
	// slow times a send into a full buffer (created on the first one).
	slow *time.Timer
}

// Watch starts a watcher. It waits for the cache to be ready, and for up to
// Options.TooNewWait for the cache to reach FromRevision (*TooNewError after
// that). A FromRevision whose following events left the window fails with
// *TooOldError. The watcher stops when ctx ends, Stop is called, the cache
// stops, the cache re-lists (replace), or it is too slow (a whole window
// behind, or its Events buffer full for Options.SlowWatcherTimeout):
// Events then closes.
func (c *Cache) Watch(ctx context.Context, opts WatchOptions) (*Watcher, error) {
	if err := c.WaitReady(ctx); err != nil {
		return nil, err
	}
	select {
	case <-c.done:
		return nil, errStopped
	default:
	}
	if err := c.waitTooNew(ctx, opts.FromRevision); err != nil {
		return nil, err
	}
	w := &Watcher{
		c:      c,
		opts:   opts,
		out:    make(chan Event, c.opts.WatcherBuffer),
		stop:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	c.mu.RLock()
	w.relists = c.relists
	if opts.InitialState {
		w.initial = c.snapshotLocked(opts.Prefix)
		w.initialEnd = c.rev
		w.cursor = c.events.next
	} else {
		from := opts.FromRevision
		if from == 0 {
			from = c.rev
		}
		if from < c.horizon {
			err := &TooOldError{Requested: from, Oldest: c.horizon + 1}
			c.mu.RUnlock()
			return nil, fmt.Errorf("watch %s: %w", opts.Prefix, err)
		}
		w.cursor = c.events.firstAfter(from)
	}
	c.mu.RUnlock()
	c.watchersChanged(1)
	go w.run(ctx)
	return w, nil
}

// waitTooNew waits for the cache to reach rev, bounded by TooNewWait.
func (c *Cache) waitTooNew(ctx context.Context, rev int64) error {
	if c.Revision() >= rev {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, c.opts.TooNewWait)
	defer cancel()
	err := c.WaitForRevision(wctx, rev)
	if err == nil {
		return nil
	}
	if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("watch: %w", &TooNewError{Requested: rev, Current: c.Revision()})
	}
	return err
}

// Events returns the channel of events; it closes when the watcher stops.
func (w *Watcher) Events() <-chan Event { return w.out }

// InitialEventsEnd is the revision of the InitialState snapshot (0 without
// InitialState): the revision of the k8s.io/initial-events-end bookmark.
func (w *Watcher) InitialEventsEnd() int64 { return w.initialEnd }

// Stop ends the watcher and waits for its goroutine to exit. Safe to call
// more than once and concurrently with reading Events.
func (w *Watcher) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.exited
}

// run is the watcher's goroutine: initial events, then the window from the
// cursor, with bookmarks whenever it has caught up and one is due.
func (w *Watcher) run(ctx context.Context) {
	c := w.c
	// Deferred in reverse: once Stop returns, Events is closed and counted.
	defer close(w.exited)
	defer c.watchersChanged(-1)
	defer close(w.out)
	defer func() {
		if w.slow != nil {
			w.slow.Stop()
		}
	}()

	for _, st := range w.initial {
		obj, ok := c.resolve(st)
		if !ok || (w.opts.Predicate != nil && !w.opts.Predicate(obj)) {
			continue
		}
		if !w.send(ctx, Event{Type: watch.Added, Key: st.key, Object: obj, Rev: st.modRev}) {
			return
		}
	}
	w.initial = nil
	if w.opts.InitialState && w.opts.Bookmarks {
		if !w.send(ctx, Event{Type: watch.Bookmark, Rev: w.initialEnd, InitialEventsEnd: true}) {
			return
		}
	}

	var tick <-chan time.Time
	if w.opts.Bookmarks {
		t := time.NewTicker(c.opts.BookmarkInterval)
		defer t.Stop()
		tick = t.C
	}
	bookmarkDue := false
	batch := make([]event, 0, readBatch)
	for {
		c.mu.RLock()
		if w.cursor < c.events.oldestSeq() {
			c.mu.RUnlock()
			c.log.Info("closing watcher that fell a whole window behind", "watchPrefix", w.opts.Prefix)
			return
		}
		if c.relists != w.relists {
			// Checked under the same lock as the window is read, so the
			// watcher never reads a re-list's differences (replace).
			c.mu.RUnlock()
			c.log.Info("closing watcher after a re-list; its client must re-watch", "watchPrefix", w.opts.Prefix)
			return
		}
		end := min(c.events.next, w.cursor+readBatch)
		for seq := w.cursor; seq < end; seq++ {
			ev := c.events.at(seq)
			batch = append(batch, *ev)
			if ev.thin {
				// Rebuilt by convert, once the lock is released.
				batch[len(batch)-1].obj = c.events.baseOf(ev)
			}
		}
		w.cursor = end
		caughtUp := end == c.events.next
		rev, changed := c.rev, c.changed
		c.mu.RUnlock()

		for i := range batch {
			if ev, ok := w.convert(&batch[i]); ok && !w.send(ctx, ev) {
				return
			}
			batch[i] = event{} // do not pin objects the window may evict
		}
		batch = batch[:0]
		if !caughtUp {
			continue
		}
		if bookmarkDue {
			if !w.send(ctx, Event{Type: watch.Bookmark, Rev: rev}) {
				return
			}
			bookmarkDue = false
		}
		select {
		case <-changed:
		case <-tick:
			bookmarkDue = true
		case <-ctx.Done():
			return
		case <-w.stop:
			return
		case <-c.done:
			return
		}
	}
}

// send delivers ev unless the watcher is stopping, or its reader leaves
// the buffer full for Options.SlowWatcherTimeout: the watcher is then too
// slow and ends (false), as kube-apiserver's cacher forces an unresponsive
// watcher closed, so it pins no more events and its client re-lists.
func (w *Watcher) send(ctx context.Context, ev Event) bool {
	select {
	case w.out <- ev:
		return true
	default:
	}
	if w.slow == nil {
		w.slow = time.NewTimer(w.c.opts.SlowWatcherTimeout)
	} else {
		w.slow.Reset(w.c.opts.SlowWatcherTimeout)
	}
	select {
	case w.out <- ev:
		w.slow.Stop()
		return true
	case <-w.slow.C:
		w.c.terminated.Add(1)
		w.c.log.Info("closing watcher whose buffer stayed full; its client must re-list",
			"watchPrefix", w.opts.Prefix, "buffered", len(w.out), "waited", w.c.opts.SlowWatcherTimeout.String())
	case <-ctx.Done():
	case <-w.stop:
	case <-w.c.done:
	}
	return false
}

// convert turns a window event into what this watcher sees, if anything:
// outside the prefix nothing; with a predicate, the transition between the
// previous and the new state decides the type, as Kubernetes' cacher does.
func (w *Watcher) convert(e *event) (Event, bool) {
	if !strings.HasPrefix(e.key, w.opts.Prefix) {
		return Event{}, false
	}
	if e.thin {
		e.obj, e.thin = w.c.opts.Thicken(e.key, e.obj, e.delta, e.rev), false
	}
	ev := Event{Type: e.typ, Key: e.key, Object: e.obj, Rev: e.rev}
	pred := w.opts.Predicate
	if pred == nil {
		return ev, true
	}
	if e.typ == watch.Deleted {
		return ev, pred(e.obj)
	}
	now := pred(e.obj)
	before := now
	if !e.prevSame {
		prev := e.prev
		if prev == nil && e.prevCold != "" {
			// A cold previous state (see event) is decoded by the watchers
			// that judge it, each for itself: there are few.
			prev, _ = w.c.resolve(entry{key: e.key, cold: e.prevCold, modRev: e.prevRev})
		}
		before = prev != nil && pred(prev)
	}
	switch {
	case now && before:
		ev.Type = watch.Modified
	case now:
		ev.Type = watch.Added
	case before:
		ev.Type = watch.Deleted
	default:
		return Event{}, false
	}
	return ev, true
}
