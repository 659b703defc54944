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
	"k8s.io/apimachinery/pkg/watch"

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
	// share memory with it (its strings, say). It is called from the cache's
	// own goroutine only.
	Decode func(key string, value []byte, rev int64, prev runtime.Object) (runtime.Object, error)
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
	// Logger receives decode failures and storage watch restarts
	// (slog.Default() if nil).
	Logger *slog.Logger
	// OnWatchersChanged, if set, is called with the number of open watchers
	// every time it changes. It may be called from several goroutines at once.
	OnWatchersChanged func(n int)
}

// entry is one current object. The same *entry sits in the map (for Get) and
// in the btree (for ordered List); obj is replaced under the write lock.
type entry struct {
	key string
	obj runtime.Object
	// modRev is obj's storage ModRevision, kept so a re-list can tell changed
	// objects from unchanged ones without parsing resourceVersion.
	modRev int64
}

func entryLess(a, b *entry) bool { return a.key < b.key }

// Cache holds the current objects under a prefix and a window of recent events.
// Create it with New and start it with Run.
type Cache struct {
	store storage.Interface
	opts  Options
	log   *slog.Logger

	mu      sync.RWMutex
	objects map[string]*entry
	sorted  *btree.BTreeG[*entry]
	events  *ring
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

	ready    chan struct{} // closed once the first list is applied
	done     chan struct{} // closed when Run returns
	started  atomic.Bool
	watchers atomic.Int64
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
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Cache{
		store:   store,
		opts:    opts,
		log:     log.With("component", "watchcache", "prefix", opts.Prefix),
		objects: make(map[string]*entry),
		sorted:  btree.NewG(32, entryLess),
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
func (c *Cache) WaitForRevision(ctx context.Context, rev int64) error {
	for {
		c.mu.RLock()
		cur, changed := c.rev, c.changed
		c.mu.RUnlock()
		if cur >= rev {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for revision %d (cache at %d): %w", rev, cur, ctx.Err())
		case <-c.done:
			return errStopped
		}
	}
}

// Get returns the current object stored at key. The object is shared: DeepCopy
// it before changing it.
func (c *Cache) Get(key string) (runtime.Object, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.objects[key]
	if !ok {
		return nil, false
	}
	return e.obj, true
}

// GetUnder is Get(prefix + name) without building the key on the heap:
// controllers that look up one object per node on every pass would
// otherwise allocate a key each time.
func (c *Cache) GetUnder(prefix, name string) (runtime.Object, bool) {
	var buf [128]byte
	key := append(append(buf[:0], prefix...), name...)
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.objects[string(key)]
	if !ok {
		return nil, false
	}
	return e.obj, true
}

// List returns the current objects whose key starts with prefix and that pred
// accepts (all if pred is nil), in key order, and the revision they are the
// state at. The objects are shared: DeepCopy them before changing them. pred
// runs under the cache's read lock and must be quick and must not call back
// into the cache.
func (c *Cache) List(prefix string, pred func(runtime.Object) bool) ([]runtime.Object, int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var objs []runtime.Object
	c.sorted.AscendGreaterOrEqual(&entry{key: prefix}, func(e *entry) bool {
		if !strings.HasPrefix(e.key, prefix) {
			return false
		}
		if pred == nil || pred(e.obj) {
			objs = append(objs, e.obj)
		}
		return true
	})
	return objs, c.rev
}

// snapshotLocked is List as ADDED events. The caller holds c.mu.
func (c *Cache) snapshotLocked(prefix string, pred func(runtime.Object) bool) []event {
	var evs []event
	c.sorted.AscendGreaterOrEqual(&entry{key: prefix}, func(e *entry) bool {
		if !strings.HasPrefix(e.key, prefix) {
			return false
		}
		if pred == nil || pred(e.obj) {
			evs = append(evs, event{typ: watch.Added, key: e.key, obj: e.obj, rev: e.modRev})
		}
		return true
	})
	return evs
}

// watchersChanged adjusts the open watcher count and reports it.
func (c *Cache) watchersChanged(delta int64) {
	n := c.watchers.Add(delta)
	if c.opts.OnWatchersChanged != nil {
		c.opts.OnWatchersChanged(int(n))
	}
}
