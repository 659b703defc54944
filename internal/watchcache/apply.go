package watchcache

import (
	"fmt"
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/leasehold/leasehold/internal/storage"
)

// decoded is a storage event with its new value already decoded, so decoding
// (the expensive part) happens outside the cache's lock.
type decoded struct {
	ev  storage.Event
	obj runtime.Object // nil for a delete, or when the value did not decode
	// prev is the key's object as of before the batch, nil if the key was
	// absent or cold (a cold one is not decoded here: see event.prevCold),
	// and prevRev its revision: the apply step uses it only if the entry
	// still holds that revision.
	prev    runtime.Object
	prevRev int64
	// same: Options.SameSelection found obj alike to prev.
	same bool
	// thin: Options.Thin found prev differs from obj only in delta.
	thin  bool
	delta Delta
}

// decode decodes the values of a batch of storage events, each given the
// key's current object (as of before the batch) to share unchanged parts with.
func (c *Cache) decode(evs []storage.Event) []decoded {
	out := make([]decoded, len(evs))
	// A cold previous state is left cold: decoding it only to share strings
	// with the new object, or to tell watchers with a predicate that it was
	// alike, cost a decompression and a decode for every write to a cold
	// entry (a renewal of a lease that went unrenewed for ColdAfter): 6% of
	// the server's CPU in a 150,000-node run whose renewals fell behind.
	c.mu.RLock()
	for i, ev := range evs {
		out[i].ev = ev
		if e := c.objects[ev.Key]; e != nil {
			out[i].prev, out[i].prevRev = e.obj, e.modRev
			if e.obj == nil && e.cold != "" && ev.Type == storage.EventPut {
				c.cold.rewritten(e.cold)
			}
		}
	}
	c.mu.RUnlock()
	for i, ev := range evs {
		if ev.Type != storage.EventPut {
			continue
		}
		prev := out[i].prev
		obj, err := c.decodeEvent(ev, prev)
		if err != nil {
			// The revision still advances (the store moved on), but the key keeps
			// its last good state: serving a stale object beats inventing a delete.
			c.log.Error("cannot decode stored object; keeping its previous state",
				"key", ev.Key, "revision", ev.Revision, "err", err)
			continue
		}
		out[i].obj = obj
		out[i].same = prev != nil && c.opts.SameSelection != nil && c.opts.SameSelection(ev.Key, prev, obj)
		if prev != nil && c.opts.Thin != nil {
			out[i].delta, out[i].thin = c.opts.Thin(ev.Key, prev, obj)
		}
	}
	return out
}

// decodeEvent returns the object of a put: its writer's, if the writer
// handed one over (Expect) and Adopt takes it, or else the value decoded.
func (c *Cache) decodeEvent(ev storage.Event, prev runtime.Object) (runtime.Object, error) {
	if c.opts.Adopt != nil {
		if handed := c.handoffs.claim(ev.Key, ev.Value); handed != nil {
			if obj, ok := c.opts.Adopt(ev.Key, handed, ev.Revision); ok {
				return obj, nil
			}
		}
	}
	return c.opts.Decode(ev.Key, ev.Value, ev.Revision, prev)
}

// applyBatch applies decoded storage events in order, appends them to the
// window and wakes every waiter once.
func (c *Cache) applyBatch(batch []decoded) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range batch {
		d := &batch[i]
		if d.ev.Type == storage.EventProgress {
			c.progressLocked(d.ev.Revision)
			continue
		}
		if d.ev.Revision <= c.rev {
			// A driver re-delivering an event would break "no duplicates".
			c.log.Warn("ignoring storage event at or before the cache's revision",
				"key", d.ev.Key, "revision", d.ev.Revision, "cacheRevision", c.rev)
			continue
		}
		c.rev = d.ev.Revision
		switch {
		case d.ev.Type == storage.EventDelete:
			c.deleteLocked(d.ev.Key, d.ev.Revision, d)
		case d.obj != nil:
			c.putLocked(d.ev.Key, d.obj, d.ev.Revision, d.ev.Revision, d)
		}
	}
	c.notifyLocked()
}

// currentLocked returns e's object, decoding it if cold. known, if not nil,
// is the decode step's view of the key: its object serves if e still holds
// the revision it was taken at (the demoter may have frozen e since, which
// changes nothing but its form). The caller holds c.mu.
func (c *Cache) currentLocked(e *entry, known *decoded) runtime.Object {
	if e.obj != nil {
		return e.obj
	}
	if known != nil && known.prev != nil && known.prevRev == e.modRev {
		return known.prev
	}
	obj, _ := c.resolve(*e)
	return obj
}

// putLocked stores obj (at storage revision modRev) at key and records an
// ADDED or MODIFIED event at evRev. d, if not nil, is the decode step's
// result: its SameSelection verdict spares keeping the previous state, but
// only if that state is still the key's (a batch may have changed the key
// since it was judged).
func (c *Cache) putLocked(key string, obj runtime.Object, modRev, evRev int64, d *decoded) {
	if e, ok := c.objects[key]; ok {
		// The event names the key by the entry's string, not the equal one
		// this write brought: the window holds an event for nearly every
		// lease, and each would otherwise keep a key string of its own.
		ev := event{typ: watch.Modified, key: e.key, obj: obj, rev: evRev}
		switch {
		case d != nil && d.same && d.prevRev == e.modRev:
			ev.prevSame = true
		case e.obj == nil && e.cold != "":
			ev.prevCold, ev.prevRev = e.cold, e.modRev
		default:
			ev.prev = c.currentLocked(e, d)
		}
		c.thinLocked(e, obj, d)
		e.obj, e.cold, e.modRev, e.last = obj, "", modRev, c.events.next+1
		c.pushLocked(ev)
		return
	}
	e := &entry{key: key, obj: obj, modRev: modRev, last: c.events.next + 1}
	c.objects[key] = e
	c.sorted.ReplaceOrInsert(e)
	c.counts.add(key, 1)
	c.pushLocked(event{typ: watch.Added, key: key, obj: obj, rev: evRev})
}

// deleteLocked removes key and records a DELETED event at rev whose object is
// the last state with resourceVersion rev, as Kubernetes sends it. d is as
// for putLocked.
func (c *Cache) deleteLocked(key string, rev int64, d *decoded) {
	e, ok := c.objects[key]
	if !ok {
		// Possible only for a key whose value never decoded.
		return
	}
	delete(c.objects, key)
	c.sorted.Delete(e)
	c.counts.add(key, -1)
	last := c.currentLocked(e, d)
	if last == nil {
		// Its cold value did not decode (logged): no object to send.
		return
	}
	tomb := last.DeepCopyObject()
	if err := setResourceVersion(tomb, rev); err != nil {
		c.log.Error("cannot set resourceVersion on deleted object", "key", key, "err", err)
	}
	c.pushLocked(event{typ: watch.Deleted, key: e.key, obj: tomb, prev: last, rev: rev})
}

// pushLocked appends to the window; an evicted event moves the horizon.
func (c *Cache) pushLocked(ev event) {
	if old, ok := c.events.push(ev); ok && old.rev > c.horizon {
		c.horizon = old.rev
	}
}

// notifyLocked wakes everyone waiting for the revision to move.
func (c *Cache) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// replace makes the cache hold exactly kvs, the whole prefix listed at rev. The
// first time it just loads them. Later (a re-list after the storage watch lost
// its history) it applies the differences as events, changed and new objects
// at their ModRevision, in that order, then deletions at rev, the only
// revision known to follow them. The horizon moves to rev because the window
// cannot answer for revisions inside the gap, and every watcher started
// before ends (relists): the differences stand for changes whose events are
// gone, and a watcher fed them would skip those changes without being told,
// a silent gap. As kube-apiserver's cacher ends its watchers when it
// re-lists, its client re-watches from the last revision it saw, which the
// horizon answers with *TooOldError (410 Gone), and re-lists. No watch can
// read the differences: they are all at revisions <= rev.
func (c *Cache) replace(kvs []decodedKV, rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.notifyLocked()
	if rev > c.horizon {
		c.horizon = rev
	}
	if !c.loaded {
		c.loaded = true
		c.rev = rev
		for _, kv := range kvs {
			e := &entry{key: kv.key, obj: kv.obj, modRev: kv.modRev}
			c.objects[kv.key] = e
			c.sorted.ReplaceOrInsert(e)
			c.counts.add(kv.key, 1)
		}
		return
	}

	c.relists++
	seen := make(map[string]struct{}, len(kvs))
	var changed []decodedKV
	for _, kv := range kvs {
		seen[kv.key] = struct{}{}
		if e, ok := c.objects[kv.key]; ok && e.modRev == kv.modRev {
			continue
		}
		changed = append(changed, kv)
	}
	var gone []string
	for key := range c.objects {
		if _, ok := seen[key]; !ok {
			gone = append(gone, key)
		}
	}
	sort.Slice(changed, func(i, j int) bool { return changed[i].modRev < changed[j].modRev })
	sort.Strings(gone)

	last := c.rev
	for _, kv := range changed {
		evRev := kv.modRev
		if evRev <= last {
			// Cannot happen with a consistent store; keep the window ordered anyway.
			evRev = rev
		}
		c.putLocked(kv.key, kv.obj, kv.modRev, evRev, nil)
		last = evRev
	}
	for _, key := range gone {
		c.deleteLocked(key, rev, nil)
	}
	if rev > c.rev {
		c.rev = rev
	}
}

// decodedKV is one listed key, decoded.
type decodedKV struct {
	key    string
	obj    runtime.Object
	modRev int64
}

func setResourceVersion(obj runtime.Object, rev int64) error {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Errorf("accessing metadata: %w", err)
	}
	acc.SetResourceVersion(strconv.FormatInt(rev, 10))
	return nil
}
