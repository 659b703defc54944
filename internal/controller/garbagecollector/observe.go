package garbagecollector

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/leasehold/leasehold/internal/watchcache"
)

// observe applies one cache event to the graph and enqueues the keys the
// change may concern. It runs on the event loop only, and is cheap for the
// common case (a lease renewal with no owners and no dependents).
func (gc *GarbageCollector) observe(ev watchcache.Event, enqueue func(string)) error {
	res, ok := gc.res.forKey(ev.Key)
	if !ok {
		return nil
	}
	acc, err := meta.Accessor(ev.Object)
	if err != nil {
		return fmt.Errorf("reading metadata of %s: %w", ev.Key, err)
	}
	if ev.Type == watch.Deleted {
		old, ok := gc.graph.remove(ev.Key)
		gc.forgetWarned(acc.GetUID())
		// Every dependent may now be dangling, and owners waiting in
		// foreground deletion may have lost a blocking dependent.
		for dep := range gc.graph.dependentsOf(ev.Key) {
			enqueue(dep)
		}
		if ok {
			gc.recheckWaitingOwners(old.owners, nil, enqueue)
		}
		return nil
	}

	n := node{uid: acc.GetUID(), deletingDependents: isDeletingDependents(acc)}
	attention := n.deletingDependents || (acc.GetDeletionTimestamp() != nil && hasFinalizer(acc, metav1.FinalizerOrphanDependents))
	known, _ := gc.graph.get(ev.Key)
	n.owners, attention = gc.resolveOwners(acc, res.Namespaced, known.owners, attention)
	old, ok := gc.graph.set(ev.Key, n)
	if ok && old.uid != n.uid {
		// The key holds a new object: the old one is gone.
		gc.forgetWarned(old.uid)
	}
	if attention {
		enqueue(ev.Key)
	}
	// Dependents that name another uid for this key point at a predecessor
	// (owner deleted and re-created under the same name).
	for dep, uid := range gc.graph.dependentsOf(ev.Key) {
		if uid != n.uid {
			enqueue(dep)
		}
	}
	gc.recheckWaitingOwners(old.owners, n.owners, enqueue)
	return nil
}

// resolveOwners returns the edges of dep's owner references, and whether
// attention or any reference calls for a worker's look: one is invalid, or
// its owner does not look solid. known are the edges the graph holds for
// dep; when the references resolve to the same edges, known itself is
// returned, so that observing a lease renewal allocates nothing here.
func (gc *GarbageCollector) resolveOwners(dep metav1.Object, depNamespaced bool, known []edge, attention bool) ([]edge, bool) {
	refs := dep.GetOwnerReferences()
	var owners []edge // nil while the edges so far are known[:n]
	n := 0
	for _, ref := range refs {
		res, ns, resolved, invalid := gc.res.resolveOwner(ref, depNamespaced, dep.GetNamespace())
		if invalid {
			attention = true // to report it
		}
		if !resolved {
			continue
		}
		var e edge
		if owners == nil && n < len(known) && known[n].uid == ref.UID && res.IsKey(known[n].owner, ns, ref.Name) {
			e = known[n]
		} else {
			if owners == nil {
				owners = append(make([]edge, 0, len(refs)), known[:n]...)
			}
			e = edge{owner: res.Key(ns, ref.Name), uid: ref.UID}
			owners = append(owners, e)
		}
		n++
		if !attention && !gc.ownerLooksSolid(e.owner, e.uid) {
			attention = true
		}
	}
	switch {
	case owners != nil:
		return owners, attention
	case n == len(known):
		return known, attention
	case n == 0:
		return nil, attention
	}
	return slices.Clone(known[:n]), attention
}

// recheckWaitingOwners enqueues the owners, among a dependent's previous and
// current references, that wait in foreground deletion: the dependent's
// change may have unblocked them.
func (gc *GarbageCollector) recheckWaitingOwners(before, after []edge, enqueue func(string)) {
	for _, list := range [][]edge{before, after} {
		for _, e := range list {
			if gc.graph.deletingDependents(e.owner) {
				enqueue(e.owner)
			}
		}
	}
}

// ownerLooksSolid is the event loop's quick test: the graph or else the
// cache shows the owner with the referenced uid and not in foreground
// deletion. Anything else is left to a worker, which checks properly. The
// graph comes first because it answers from memory it already holds, while
// the cache may keep the owner compressed (a Node between status reports)
// and would decode it for every renewal of its lease. Trusting the graph is
// safe: if the owner has changed since, its event is still to come, and
// observing it enqueues every dependent.
func (gc *GarbageCollector) ownerLooksSolid(key string, uid types.UID) bool {
	if gc.graph.solid(key, uid) {
		return true
	}
	obj, ok := gc.cache.Get(key)
	if !ok {
		return false
	}
	acc, err := meta.Accessor(obj)
	return err == nil && acc.GetUID() == uid && !isDeletingDependents(acc)
}

func (gc *GarbageCollector) forgetWarned(uid types.UID) {
	gc.warnedMu.Lock()
	delete(gc.warned, uid)
	gc.warnedMu.Unlock()
}

// isDeletingDependents: being deleted in the foreground (waiting for
// dependents).
func isDeletingDependents(m metav1.Object) bool {
	return m.GetDeletionTimestamp() != nil && hasFinalizer(m, metav1.FinalizerDeleteDependents)
}

func hasFinalizer(m metav1.Object, f string) bool {
	for _, x := range m.GetFinalizers() {
		if x == f {
			return true
		}
	}
	return false
}
