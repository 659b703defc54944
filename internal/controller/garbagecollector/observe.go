package garbagecollector

import (
	"fmt"

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
		old := gc.graph.remove(ev.Key)
		gc.forgetWarned(acc.GetUID())
		// Every dependent may now be dangling, and owners waiting in
		// foreground deletion may have lost a blocking dependent.
		for dep := range gc.graph.dependentsOf(ev.Key) {
			enqueue(dep)
		}
		if old != nil {
			gc.recheckWaitingOwners(old.owners, nil, enqueue)
		}
		return nil
	}

	n := &node{uid: acc.GetUID(), deletingDependents: isDeletingDependents(acc)}
	attention := n.deletingDependents || (acc.GetDeletionTimestamp() != nil && hasFinalizer(acc, metav1.FinalizerOrphanDependents))
	for _, ref := range acc.GetOwnerReferences() {
		_, key, resolved, invalid := gc.res.ownerKey(ref, res.Namespaced, acc.GetNamespace())
		if invalid {
			attention = true // to report it
		}
		if !resolved {
			continue
		}
		n.owners = append(n.owners, edge{owner: key, uid: ref.UID})
		if !attention && !gc.ownerLooksSolid(key, ref.UID) {
			attention = true
		}
	}
	old := gc.graph.set(ev.Key, n)
	if old != nil && old.uid != n.uid {
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
	var before []edge
	if old != nil {
		before = old.owners
	}
	gc.recheckWaitingOwners(before, n.owners, enqueue)
	return nil
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
