package watchcache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/storage"
)

// Defaults for zero Options fields.
const (
	DefaultWindow           = 100_000
	DefaultBookmarkInterval = time.Minute
	DefaultWatcherBuffer    = 100
	// DefaultTooNewWait is how long Watch waits for the cache to reach a
	// requested revision before answering ErrTooNew (Kubernetes waits 3 s).
	DefaultTooNewWait = 3 * time.Second
	// DefaultColdAfter is one and a half node lease renewal periods (10 s in
	// Kubernetes), the margin absorbing late renewals: a renewed lease never
	// goes cold, a Node between status reports (5 min) does, and a fleet
	// that registers at once is compressed within 20 s.
	DefaultColdAfter = 15 * time.Second
	// DefaultSlowWatcherTimeout is how long a watcher's buffer may stay
	// full before the watcher is closed. kube-apiserver's cacher waits at
	// most its dispatch budget (about 100 ms, shared by all watchers)
	// because its dispatcher blocks on every watcher; here each watcher
	// reads the window on its own goroutine, so a longer bound costs no
	// other watcher anything and spares clients a re-list over a hiccup.
	DefaultSlowWatcherTimeout = 5 * time.Second
	// DefaultListBudget bounds the objects that pages being served hold at
	// once (see ListPage): four lists of 50,000 objects, or one of any size.
	DefaultListBudget = 200_000
)

// Options configures a Cache.
type Options struct {
	// Prefix is the storage key prefix cached, e.g. "/registry/". The cache's
	// revision only advances on events under it, so every write the API serves
	// must fall under it.
	Prefix string
	// Decode turns a stored value into an object and sets its
	// metadata.resourceVersion to rev. prev is the key's object in the cache,
	// or nil: published, so only to be read, and the returned object may
	// share memory with it (its strings, say). It must not keep value, and
	// it may be called from several goroutines at once: readers decode cold
	// entries (see Encode).
	Decode func(key string, value []byte, rev int64, prev runtime.Object) (runtime.Object, error)
	// Adopt, if set, takes over the object a writer handed over with
	// Expect (the writer's decoded form of the value) in place of decoding
	// the value: it sets the object's resourceVersion to rev and returns
	// it, or false if it does not take it (the value is then decoded). The
	// cache is the object's only owner from then on.
	Adopt func(key string, obj runtime.Object, rev int64) (runtime.Object, bool)
	// Encode, if set, turns an object back into a stored value Decode reads.
	// It lets the cache keep an object unchanged for ColdAfter compressed
	// instead of decoded, and decode it again for each read (see cold.go).
	// It is called from one goroutine at a time.
	Encode func(obj runtime.Object) ([]byte, error)
	// ColdAfter is how long an object stays unchanged before the cache
	// compresses it (DefaultColdAfter if 0), give or take a quarter of it.
	// Objects rewritten more often (renewed leases) stay decoded.
	ColdAfter time.Duration
	// SameSelection, if set, reports whether every WatchOptions.Predicate
	// judges prev and obj, two states of the object at key, alike (for the API
	// server: the same name, namespace, labels and selectable fields). An
	// update for which it is true keeps no reference to prev in the event
	// window: prev is needed only to tell a watcher with a predicate that an
	// object started or stopped matching, and a lease renewal, the bulk of
	// all writes, changes nothing a predicate reads, while keeping every
	// previous version for the window's lifetime roughly doubled the lease
	// objects the cache holds. It is called from the cache's own goroutine.
	SameSelection func(key string, prev, obj runtime.Object) bool
	// Thin, if set, reports whether older, the previous state of the
	// object at key, differs from newer only in what a Delta can record,
	// and returns that Delta. The window then keeps the Delta instead of
	// older (see thin.go). The Delta must hold older's own values of every
	// field Thin lets differ, changed or not: a chain of such versions is
	// rebuilt from its newest member alone. It is called from the cache's
	// own goroutine, mostly outside its lock (under it when one batch
	// changes a key twice); both objects are published, only to be read.
	Thin func(key string, older, newer runtime.Object) (Delta, bool)
	// Thicken rebuilds the state Thin took d from: a new object equal to
	// newer with d's fields set back and resourceVersion rev. newer is
	// published, only to be read. It must be set with Thin.
	Thicken func(key string, newer runtime.Object, d Delta, rev int64) runtime.Object
	// Window is the number of recent events kept (DefaultWindow if 0).
	Window int
	// BookmarkInterval is how often watchers that asked get a BOOKMARK
	// (DefaultBookmarkInterval if 0).
	BookmarkInterval time.Duration
	// WatcherBuffer is the capacity of each watcher's Events channel
	// (DefaultWatcherBuffer if 0).
	WatcherBuffer int
	// TooNewWait bounds how long Watch waits for a future revision
	// (DefaultTooNewWait if 0).
	TooNewWait time.Duration
	// SlowWatcherTimeout is how long a watcher may wait for room in its full
	// Events buffer before it is closed as too slow
	// (DefaultSlowWatcherTimeout if 0).
	SlowWatcherTimeout time.Duration
	// ListBudget bounds the objects held by the pages ListPage hands out
	// and their callers have not yet released (DefaultListBudget if 0).
	ListBudget int64
	// Logger receives decode failures and storage watch restarts
	// (slog.Default() if nil).
	Logger *slog.Logger
	// OnWatchersChanged, if set, is called with the number of open watchers
	// every time it changes. It may be called from several goroutines at once.
	OnWatchersChanged func(n int)
}

// entry is one current object. The same *entry sits in the map (for Get) and
// in the btree (for ordered List); its fields change under the write lock,
// so a reader copies the entry under the read lock and decodes a cold one
// after releasing it.
type entry struct {
	key string
	// obj is the object, or nil while the entry is cold: cold then holds
	// its compressed stored form (see cold.go). A string, not a []byte: an
	// entry of 64 bytes instead of 72 fits a size class 16 bytes smaller,
	// 32 B per fleet node (its Node and its lease).
	obj  runtime.Object
	cold string
	// modRev is the object's storage ModRevision, kept so a re-list can tell
	// changed objects from unchanged ones without parsing resourceVersion.
	modRev int64
	// last is one more than the sequence number of the key's newest event
	// (0: none), which thinLocked may thin when the next one comes.
	last uint64
}

func entryLess(a, b *entry) bool { return a.key < b.key }

// Cache holds the current objects under a prefix and a window of recent events.
// Create it with New and start it with Run.
type Cache struct {
	store storage.Interface
	opts  Options
	log   *slog.Logger

	cold *coldStore

	mu      sync.RWMutex
	objects map[string]*entry
	sorted  *btree.BTreeG[*entry]
	// counts holds the number of keys under every prefix ending in "/"
	// (see counts.go), so a first page knows how many keys follow it
	// without visiting them.
	counts prefixCounts
	events *ring
	// loaded is set by the first list.
	loaded bool
	// rev is the newest revision applied (a list's revision or an event's).
	rev int64
	// horizon is the newest revision whose events are no longer all in the
	// window: a watch must start at a revision >= horizon.
	horizon int64
	// changed is closed and replaced whenever rev advances, waking every
	// watcher and WaitForRevision caller at once.
	changed chan struct{}
	// relists counts the re-lists after the first list (replace): a
	// watcher started before one ends before reading past it.
	relists uint64

	ready    chan struct{} // closed once the first list is applied
	done     chan struct{} // closed when Run returns
	started  atomic.Bool
	watchers atomic.Int64
	// terminated counts the watchers closed for being too slow.
	terminated atomic.Int64
	// lists bounds the objects held by unreleased pages.
	lists *budget
	// progress paces the store progress requests of waiting reads.
	progress progressRequests
	// handoffs holds the writers' objects for their writes' events
	// (handoff.go).
	handoffs handoffs
}

// New returns a cache over store; it holds nothing until Run has listed.
func New(store storage.Interface, opts Options) *Cache {
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.BookmarkInterval <= 0 {
		opts.BookmarkInterval = DefaultBookmarkInterval
	}
	if opts.WatcherBuffer <= 0 {
		opts.WatcherBuffer = DefaultWatcherBuffer
	}
	if opts.TooNewWait <= 0 {
		opts.TooNewWait = DefaultTooNewWait
	}
	if opts.ColdAfter <= 0 {
		opts.ColdAfter = DefaultColdAfter
	}
	if opts.SlowWatcherTimeout <= 0 {
		opts.SlowWatcherTimeout = DefaultSlowWatcherTimeout
	}
	if opts.ListBudget <= 0 {
		opts.ListBudget = DefaultListBudget
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "watchcache", "prefix", opts.Prefix)
	cold := newColdStore(opts.Prefix)
	cold.replaced = func(name string, values, stored, compressed int64) {
		log.Info("replaced an unfit cold dictionary", "resource", name,
			"values", values, "storedBytes", stored, "compressedBytes", compressed)
	}
	return &Cache{
		store:   store,
		opts:    opts,
		log:     log,
		cold:    cold,
		objects: make(map[string]*entry),
		sorted:  btree.NewG(32, entryLess),
		counts:  prefixCounts{},
		lists:   newBudget(opts.ListBudget),
		events:  newRing(opts.Window),
		changed: make(chan struct{}),
		ready:   make(chan struct{}),
		done:    make(chan struct{}),
	}
}

// WaitReady blocks until the cache has applied its first list, ctx ends, or the
// cache stops.
func (c *Cache) WaitReady(ctx context.Context) error {
	select {
	case <-c.ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for watch cache of %s: %w", c.opts.Prefix, ctx.Err())
	case <-c.done:
		return errStopped
	}
}

var errStopped = errors.New("watch cache stopped")

// Revision is the newest revision the cache has applied.
func (c *Cache) Revision() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.rev
}

// OldestRevision is the oldest revision whose changes the window still holds:
// a watch can start from any revision >= OldestRevision()-1.
func (c *Cache) OldestRevision() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.horizon + 1
}

// WaitForRevision blocks until Revision() >= rev, ctx ends, or the cache stops.
// While it waits it asks the store for progress (progress.go), so writes
// outside the cache's prefix do not keep it waiting.
func (c *Cache) WaitForRevision(ctx context.Context, rev int64) error {
	var ticks <-chan time.Time
	for asked := false; ; asked = true {
		c.mu.RLock()
		cur, changed := c.rev, c.changed
		c.mu.RUnlock()
		if cur >= rev {
			return nil
		}
		if !asked {
			c.requestProgress(ctx)
			var stop func()
			ticks, stop = c.progressTicks()
			defer stop()
		}
		select {
		case <-ticks:
			c.requestProgress(ctx)
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for revision %d (cache at %d): %w", rev, cur, ctx.Err())
		case <-c.done:
			return errStopped
		}
	}
}

// Get returns the current object stored at key. The object is shared: DeepCopy
// it before changing it (a cold entry's is decoded for this call alone).
func (c *Cache) Get(key string) (runtime.Object, bool) {
	c.mu.RLock()
	st := copyOf(c.objects[key])
	c.mu.RUnlock()
	return c.resolve(st)
}

// GetUnder is Get(prefix + name) without building the key on the heap:
// controllers that look up one object per node on every pass would
// otherwise allocate a key each time.
func (c *Cache) GetUnder(prefix, name string) (runtime.Object, bool) {
	obj, _, ok := c.GetUnderIfChanged(prefix, name, 0) // no object is at revision 0
	return obj, ok
}

// GetUnderIfChanged is GetUnder for a caller that keeps its own digest of
// the object and knows the revision it digested (seen, 0 for none): it
// returns the object's current revision, and the object only when that
// revision is not seen; ok is false when there is no object. Looking at an
// unchanged object costs one map lookup and never decodes a cold entry: the
// node lifecycle controller looks at every node's lease on every pass, and
// at 100,000 nodes decoding the ones that had gone cold was 4.5% of the
// server's CPU profile (0.68 of 15.1 s) in a fleet run that had fallen
// behind.
func (c *Cache) GetUnderIfChanged(prefix, name string, seen int64) (obj runtime.Object, rev int64, ok bool) {
	var buf [128]byte
	key := append(append(buf[:0], prefix...), name...)
	c.mu.RLock()
	e := c.objects[string(key)]
	if e == nil {
		c.mu.RUnlock()
		return nil, 0, false
	}
	if e.modRev == seen {
		c.mu.RUnlock()
		return nil, seen, true
	}
	st := *e
	c.mu.RUnlock()
	obj, ok = c.resolve(st)
	return obj, st.modRev, ok
}

// copyOf is *e, or the zero entry (which resolves to nothing) if e is nil.
// The caller holds c.mu.
func copyOf(e *entry) entry {
	if e == nil {
		return entry{}
	}
	return *e
}

// List returns the current objects whose key starts with prefix and that pred
// accepts (all if pred is nil), in key order, and the revision they are the
// state at. The objects are shared: DeepCopy them before changing them. pred
// may run under the cache's read lock: it must be quick and must not call
// back into the cache. It is ListPage without a limit or a budget, for
// in-process callers; the API serves lists with ListPage.
func (c *Cache) List(prefix string, pred func(runtime.Object) bool) ([]runtime.Object, int64) {
	p := c.page(PageRequest{Prefix: prefix, Predicate: pred})
	return p.Objects, p.Revision
}

// KeyRevision is a key and the storage revision of its current object.
type KeyRevision struct {
	Key         string
	ModRevision int64
}

// ListRevisions appends to into the key and revision of every current object
// whose key starts with prefix, in key order, and returns it with the
// revision that is the state at. It decodes nothing: a controller that keeps
// its own digest of objects fetches (Get) only the keys whose revision moved.
func (c *Cache) ListRevisions(prefix string, into []KeyRevision) ([]KeyRevision, int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	c.sorted.AscendGreaterOrEqual(&entry{key: prefix}, func(e *entry) bool {
		if !strings.HasPrefix(e.key, prefix) {
			return false
		}
		into = append(into, KeyRevision{Key: e.key, ModRevision: e.modRev})
		return true
	})
	return into, c.rev
}

// snapshotLocked copies the entries under prefix, in key order. The caller
// holds c.mu; cold entries are decoded later, by whoever sends them.
func (c *Cache) snapshotLocked(prefix string) []entry {
	var states []entry
	c.sorted.AscendGreaterOrEqual(&entry{key: prefix}, func(e *entry) bool {
		if !strings.HasPrefix(e.key, prefix) {
			return false
		}
		states = append(states, *e)
		return true
	})
	return states
}

// TerminatedWatchers is how many watchers were closed because their
// reader left their buffer full for Options.SlowWatcherTimeout (kube-
// apiserver's apiserver_terminated_watchers_total).
func (c *Cache) TerminatedWatchers() int64 { return c.terminated.Load() }

// watchersChanged adjusts the open watcher count and reports it.
func (c *Cache) watchersChanged(delta int64) {
	n := c.watchers.Add(delta)
	if c.opts.OnWatchersChanged != nil {
		c.opts.OnWatchersChanged(int(n))
	}
}
