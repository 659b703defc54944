package garbagecollector

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// edge is one owner reference of a dependent, resolved to the storage key
// the owner would have (the owner is found by name; the uid is checked later).
type edge struct {
	owner string
	uid   types.UID
}

// node is what the graph remembers of one object.
type node struct {
	uid    types.UID
	owners []edge
	// deletingDependents: deletionTimestamp set and the foregroundDeletion
	// finalizer present (the owner waits for its blocking dependents).
	deletingDependents bool
}

// graph is the dependency graph, written only by the event loop and read by
// the workers. Dependents are indexed by the owner's storage key rather than
// its uid, so an owner that is deleted and re-created under the same name
// finds the dependents that still point at its predecessor.
//
// Nodes are held by value: one per object served (300,000 at 100,000
// nodes), a pointer each was as many heap objects for the collector to
// trace, and a lease renewal would allocate one only to find it unchanged.
type graph struct {
	mu    sync.RWMutex
	nodes map[string]node
	// dependents: owner key → dependent key → the uid the dependent's
	// reference names.
	dependents map[string]dependentSet
	byUID      map[types.UID]string
	// rev is the cache revision the graph reflects; 0 while a snapshot is
	// still being loaded.
	rev int64
}

func newGraph() *graph {
	return &graph{
		nodes:      map[string]node{},
		dependents: map[string]dependentSet{},
		byUID:      map[types.UID]string{},
	}
}

// get returns the state of key, if the graph has it.
func (g *graph) get(key string) (node, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[key]
	return n, ok
}

// set records the state of key and returns its previous state (ok false if
// it is new).
func (g *graph) set(key string, n node) (old node, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	old, ok = g.nodes[key]
	if ok {
		if old.uid != n.uid {
			delete(g.byUID, old.uid)
		}
		if !slices.Equal(old.owners, n.owners) {
			g.unlinkLocked(key, old.owners)
		} else if old.uid == n.uid && old.deletingDependents == n.deletingDependents {
			// The same state (a lease renewal's case): nothing to write.
			return old, true
		} else {
			// Same references: nothing to re-index.
			g.nodes[key] = n
			g.byUID[n.uid] = key
			return old, true
		}
	}
	g.nodes[key] = n
	g.byUID[n.uid] = key
	for _, e := range n.owners {
		deps := g.dependents[e.owner]
		deps.put(key, e.uid)
		g.dependents[e.owner] = deps
	}
	return old, ok
}

// remove forgets key and returns its last state (ok false if unknown).
func (g *graph) remove(key string) (old node, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	old, ok = g.nodes[key]
	if !ok {
		return old, false
	}
	delete(g.nodes, key)
	if g.byUID[old.uid] == key {
		delete(g.byUID, old.uid)
	}
	g.unlinkLocked(key, old.owners)
	return old, true
}

func (g *graph) unlinkLocked(key string, owners []edge) {
	for _, e := range owners {
		deps, ok := g.dependents[e.owner]
		if !ok {
			continue
		}
		deps.remove(key)
		if deps.len() == 0 {
			delete(g.dependents, e.owner)
		} else {
			g.dependents[e.owner] = deps
		}
	}
}

// dependentsOf returns the keys of the objects that reference owner key
// (with any uid), and the uid each reference names.
func (g *graph) dependentsOf(owner string) map[string]types.UID {
	g.mu.RLock()
	defer g.mu.RUnlock()
	deps := g.dependents[owner]
	return deps.copy()
}

// hasDependents tells whether any object references the owner key with uid.
func (g *graph) hasDependents(owner string, uid types.UID) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	deps := g.dependents[owner]
	return deps.references(uid)
}

// deletingDependents tells whether the graph knows key as an owner waiting
// for its dependents (foreground deletion).
func (g *graph) deletingDependents(key string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[key]
	return ok && n.deletingDependents
}

// solid tells whether the graph knows key as the object with uid, not
// waiting for its dependents.
func (g *graph) solid(key string, uid types.UID) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[key]
	return ok && n.uid == uid && !n.deletingDependents
}

// keyOfUID returns the key of the object with uid, if the graph has it.
func (g *graph) keyOfUID(uid types.UID) (string, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	k, ok := g.byUID[uid]
	return k, ok
}

func (g *graph) setRevision(rev int64) {
	g.mu.Lock()
	g.rev = rev
	g.mu.Unlock()
}

func (g *graph) revision() int64 {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.rev
}

// reset empties the graph before a new snapshot is loaded into it.
func (g *graph) reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.nodes = map[string]node{}
	g.dependents = map[string]dependentSet{}
	g.byUID = map[types.UID]string{}
	g.rev = 0
}
