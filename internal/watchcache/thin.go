package watchcache

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Thin events.
//
// Why: the window keeps Options.Window events, and each holds its object.
// For most keys the newest event's object is also the current entry's, so
// it costs nothing extra; every older version of a key, though, is kept by
// the window alone. A node lease renewed every 10 s has five such versions
// in a window of 100,000 events at 20,000 nodes: they were a third of the
// server's live heap, every one a tree of pointers the collector marks on
// each cycle, though a renewal changes nothing in them but a few
// timestamps and nobody reads them unless a watcher lags by a whole
// renewal period. Measured (scripts/heap-per-node.sh, 20,000 nodes, 60 s,
// 2026-11-28): 4,666 B of live heap per node before, 2,901 after. At
// 100,000 nodes on one core the server's CPU per renewal fell from 94.4 µs
// (e7abab9) to 87.3 (less marking), and a typed-client renewal's from
// 60.5-60.7 to 57.3-60.0 µs (scripts/renewal-ratio.sh, PIN=1).
//
// So when a key's next version arrives and Options.Thin (called by the
// decode step, outside the lock, unless the same batch changed the key
// before) finds the previous one differs from it only in what a Delta
// records, the previous event drops its object and keeps the Delta
// (pointer-free, inside the window's own array) and the sequence number
// of its successor. A watcher reading a thin event follows the
// successors, under the read lock, to the first that still holds its
// object, and after releasing the lock rebuilds the old object from it
// with Options.Thicken (a DeepCopy and the Delta's fields set back).
// Every link of that chain was a change Thin accepted, and each Delta
// holds its version's own values of every field Thin lets differ, so the
// object the chain ends at differs from the thin event's only in fields
// its Delta restores. Successors are newer, so the
// window evicts them after the thin event, never before.
//
// Thicken is given the event's revision, so the rebuilt object's
// resourceVersion is the event's. A watcher that keeps up never meets a
// thin event: it read each event while it was the newest of its key.

// Delta records, without pointers, how an object differed from its next
// version. Its meaning belongs to Options.Thin and Options.Thicken.
type Delta [3]int64

// thinLocked makes the key's newest event thin if Thin finds its object
// differs from obj, the version about to be pushed, only in a Delta. e is
// the key's entry and d the decode step's view of the key (nil for a
// re-list): its verdict, reached outside the lock, serves if it judged
// that very object; otherwise (the key changed earlier in the same batch)
// Thin is asked here. The caller holds c.mu.
func (c *Cache) thinLocked(e *entry, obj runtime.Object, d *decoded) {
	if c.opts.Thin == nil || e.last == 0 || e.last-1 < c.events.oldestSeq() {
		return
	}
	ev := c.events.at(e.last - 1)
	// The event must be the one that made the key's current version.
	if ev.thin || ev.obj == nil || ev.key != e.key || ev.rev != e.modRev || ev.typ == watch.Deleted {
		return
	}
	var delta Delta
	var ok bool
	if d != nil && d.prevRev == e.modRev && d.prev == ev.obj {
		delta, ok = d.delta, d.thin
	} else {
		delta, ok = c.opts.Thin(e.key, ev.obj, obj)
	}
	if !ok {
		return
	}
	ev.obj, ev.thin, ev.delta, ev.base = nil, true, delta, c.events.next
}

// ThinEvents returns how many of the window's events are thin and how
// many events it holds. It reads the whole window: for tests and
// diagnostics, not for a request's path.
func (c *Cache) ThinEvents() (thin, events int) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for seq := c.events.oldestSeq(); seq < c.events.next; seq++ {
		if c.events.at(seq).thin {
			thin++
		}
	}
	return thin, c.events.len
}

// baseOf returns the object a thin event is rebuilt from: that of the
// first of its successors that still holds one. The caller holds c.mu
// (read or write).
func (r *ring) baseOf(e *event) runtime.Object {
	for e.thin {
		e = r.at(e.base)
	}
	return e.obj
}
