package garbagecollector

import (
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"

	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/slots"
	"github.com/leasehold/leasehold/internal/uidbytes"
)

// edge is one owner reference of a dependent, resolved to the storage key
// the owner would have (the owner is found by name; the uid is checked later).
// It is how observe and the workers speak of references; the graph itself
// holds them as links.
type edge struct {
	owner string
	uid   types.UID
	// res and name are the owner's resource and name the reference resolved
	// to (nil and "" when unknown: the edge then never looks unchanged).
	res  *registry.Resource
	name string
}

// node is what the graph remembers of one object, as get returns it.
type node struct {
	uid    types.UID
	owners []edge
	// deletingDependents: deletionTimestamp set and the foregroundDeletion
	// finalizer present (the owner waits for its blocking dependents).
	deletingDependents bool
}

// slotID numbers an entry of the graph; 0 is no entry.
type slotID int32

// link is an edge as the graph holds it: the owner's entry instead of its
// key, so that following it hashes nothing and the key is stored once. res,
// name and uid are the reference's: a renewal's object shares its strings
// with the previous version (the cache interns it like that one), so
// comparing them with the new references compares pointers and touches
// neither the owner's entry nor its key. res is the resource's number in
// the graph (resID): 4 bytes beside owner where a pointer took 8, which
// makes a link 40 bytes and an entry 88 instead of 96 (16 B per Node and
// lease).
type link struct {
	owner slotID
	res   resID
	name  string
	uid   types.UID
}

// resID numbers the resources that edges name, in the order the graph
// first sees them; 0 is nil (an edge whose resource is unknown).
type resID uint32

// entry is one storage key of the graph: an object (present), or a key that
// objects name as their owner without the graph holding an object there,
// or both. An entry lives while it is present or has dependents.
type entry struct {
	key string
	// uid is the object's uid (zero when not present) as the 16 bytes of a
	// canonical UUID, which every uid the API server gives out is; any
	// other is in extra.uid and otherUID is set. Held as bytes, the uid
	// leaves the object's own string to the collector: nothing else keeps
	// a Node's uid string while the watch cache holds the Node compressed,
	// so a string here kept 48 bytes alive per Node (at 20,000 nodes the
	// profile's ObjectMeta.Unmarshal went from 4.17 to 3.38 MB). The price
	// is on a renewal's path: uidIs reads the uid's bytes where comparing
	// strings found them pointer-equal: 12-20 ns with hot caches, 30-40 ns
	// more per renewal in BenchmarkObserveRenewal, whose uid strings are
	// cold (a renewal's decoding reads them in the server).
	uid [16]byte
	// link0 is the object's first resolved reference (owner 0: none), held
	// inline because a Lease has exactly one; extra holds the others.
	link0 link
	// deps0 is the first of the entries whose links name this key (a Node
	// has one dependent, its Lease); extra holds the others. Each is there
	// once.
	deps0 slotID
	// ownersSolid: every owner of the object was seen solid, and since then
	// neither its references nor any owner's presence, uid or foreground
	// deletion changed, so a renewal need not look at the owners. It is
	// cleared on the dependents of an owner that changes so. Where a graph
	// epoch and a uint64 stamp per entry were, this is a byte in what was
	// padding: with the fields in this order, 16 bytes less per entry (112
	// to 96; the profile's Slot, 6.41 to 5.70 MB at 20,000 nodes).
	ownersSolid        bool
	present            bool
	deletingDependents bool
	otherUID           bool
	extra              *entryExtra
}

// entryExtra is what an entry rarely has: more than one owner or dependent,
// or a uid that is not a canonical UUID.
type entryExtra struct {
	links []link
	deps  []slotID
	uid   types.UID // when otherUID
}

// uidIs tells whether the object's uid is uid, comparing without
// allocating.
func (e *entry) uidIs(uid types.UID) bool {
	if e.otherUID {
		return e.extra.uid == uid
	}
	return uidbytes.Is(&e.uid, uid)
}

// uidString returns the object's uid, like, if it is the same uid, so that
// the common case (a caller that knows the uid) allocates nothing; like may
// be "".
func (e *entry) uidString(like types.UID) types.UID {
	switch {
	case e.otherUID:
		return e.extra.uid
	case uidbytes.Is(&e.uid, like):
		return like
	}
	return uidbytes.Format(&e.uid)
}

// setUID records the object's uid.
func (e *entry) setUID(uid types.UID) {
	if b, ok := uidbytes.Parse(uid); ok {
		e.uid, e.otherUID = b, false
		if e.extra != nil {
			e.extra.uid = ""
			e.trimExtra()
		}
		return
	}
	e.uid, e.otherUID = [16]byte{}, true
	if e.extra == nil {
		e.extra = &entryExtra{}
	}
	e.extra.uid = uid
}

// clearUID forgets the object's uid.
func (e *entry) clearUID() {
	e.uid, e.otherUID = [16]byte{}, false
	if e.extra != nil {
		e.extra.uid = ""
		e.trimExtra()
	}
}

// numLinks is how many references the entry holds.
func (e *entry) numLinks() int {
	n := 0
	if e.link0.owner != 0 {
		n = 1
	}
	if e.extra != nil {
		n += len(e.extra.links)
	}
	return n
}

// linkAt returns the i-th reference, i < numLinks.
func (e *entry) linkAt(i int) *link {
	if i == 0 {
		return &e.link0
	}
	return &e.extra.links[i-1]
}

// setLinks replaces the entry's references.
func (e *entry) setLinks(links []link) {
	e.link0 = link{}
	if e.extra != nil {
		e.extra.links = nil
	}
	if len(links) > 0 {
		e.link0 = links[0]
	}
	if len(links) > 1 {
		if e.extra == nil {
			e.extra = &entryExtra{}
		}
		e.extra.links = links[1:]
	}
	e.trimExtra()
}

func (e *entry) trimExtra() {
	if e.extra != nil && len(e.extra.links) == 0 && len(e.extra.deps) == 0 && !e.otherUID {
		e.extra = nil
	}
}

// graph is the dependency graph, written only by the event loop and read by
// the workers. Dependents are indexed by the owner's storage key rather than
// its uid, so an owner that is deleted and re-created under the same name
// finds the dependents that still point at its predecessor.
//
// Memory: one entry per object (40,000 at 20,000 nodes) in a chunked arena
// with its index of keys (package slots), and a uid index of entry ids that
// finds a UUID in the entries themselves (pointer-free, which the Go
// collector does not scan). At 20,000 nodes a map entry per object, a
// second one per uid and a third per owner (nodes, byUID and dependents,
// each keyed by a string) held 610 B per Node and lease (heap profile of
// scripts/heap-per-node.sh); the arena and its index held 277 B with a
// Go map for the index of keys, the uid index 13. The index of keys is a
// slots.Index now, as the uid index is: with the node lifecycle
// controller's table, which changed the same way, the server's live heap
// per node fell by 116 B more (2,401 -> 2,285).
type graph struct {
	mu      sync.RWMutex
	entries *slots.Table[entry, slotID]
	byUID   uidIndex
	// waiting counts the present entries that are deletingDependents: while
	// it is 0 no owner waits for its dependents and a dependent's change
	// need not look for one.
	waiting int
	// resources are the resources of the links by resID, and resIDs their
	// numbers; there are as many as the served resources that own
	// something.
	resources []*registry.Resource
	resIDs    map[*registry.Resource]resID
	// rev is the cache revision the graph reflects; 0 while a snapshot is
	// still being loaded.
	rev atomic.Int64
}

func newGraph() *graph {
	g := &graph{}
	g.resetLocked()
	return g
}

func (g *graph) resetLocked() {
	g.entries = slots.New[entry, slotID](func(e *entry) *string { return &e.key }) // slot 0 is none
	g.byUID = newUIDIndex(g.entries)
	g.waiting = 0
	g.resources, g.resIDs = []*registry.Resource{nil}, map[*registry.Resource]resID{nil: 0}
	g.rev.Store(0)
}

// resID returns res's number, giving it one if it has none.
func (g *graph) resID(res *registry.Resource) resID {
	id, ok := g.resIDs[res]
	if !ok {
		id = resID(len(g.resources))
		g.resources = append(g.resources, res)
		g.resIDs[res] = id
	}
	return id
}

// at returns the entry of id.
func (g *graph) at(id slotID) *entry { return g.entries.At(id) }

// lookup returns the entry of key, nil if none.
func (g *graph) lookup(key string) (slotID, *entry) {
	return g.entries.Lookup(key)
}

// slotOf returns key's entry, making an empty one if there is none.
func (g *graph) slotOf(key string) slotID {
	id, _ := g.entries.Slot(key)
	return id
}

// release frees id's entry once it is neither present nor an owner.
func (g *graph) release(id slotID) {
	e := g.at(id)
	if e.present || e.deps0 != 0 || e.key == "" { // key "": released already (a key named twice)
		return
	}
	g.entries.Release(e.key, id)
}

// addDep records that dep links to the entry e.
func (e *entry) addDep(dep slotID) {
	switch {
	case e.deps0 == dep:
	case e.deps0 == 0:
		e.deps0 = dep
	default:
		if e.extra == nil {
			e.extra = &entryExtra{}
		}
		for _, d := range e.extra.deps {
			if d == dep {
				return
			}
		}
		e.extra.deps = append(e.extra.deps, dep)
	}
}

// removeDep forgets dep as a dependent of e.
func (e *entry) removeDep(dep slotID) {
	var more []slotID
	if e.extra != nil {
		more = e.extra.deps
	}
	if e.deps0 == dep {
		e.deps0 = 0
		if n := len(more); n > 0 {
			e.deps0 = more[n-1]
			more = more[:n-1]
		}
	} else {
		for i, d := range more {
			if d == dep {
				more[i] = more[len(more)-1]
				more = more[:len(more)-1]
				break
			}
		}
	}
	if e.extra != nil {
		e.extra.deps = more
		if len(more) == 0 {
			e.extra.deps = nil
		}
		e.trimExtra()
	}
}

// eachDep calls fn with every dependent of e.
func (e *entry) eachDep(fn func(slotID)) {
	if e.deps0 == 0 {
		return
	}
	fn(e.deps0)
	if e.extra != nil {
		for _, d := range e.extra.deps {
			fn(d)
		}
	}
}

// nodeOf returns what get returns of a present entry; its uid is like if
// that is the object's (see uidString).
func (g *graph) nodeOf(e *entry, like types.UID) node {
	return node{uid: e.uidString(like), owners: g.edgesOf(e), deletingDependents: e.deletingDependents}
}

// edgesOf returns e's links as edges (nil if none).
func (g *graph) edgesOf(e *entry) []edge {
	k := e.numLinks()
	if k == 0 {
		return nil
	}
	owners := make([]edge, k)
	for i := range k {
		l := e.linkAt(i)
		owners[i] = edge{owner: g.at(l.owner).key, uid: l.uid, res: g.resources[l.res], name: l.name}
	}
	return owners
}

// sameLinks tells whether e's links are edges.
func (g *graph) sameLinks(e *entry, edges []edge) bool {
	if e.numLinks() != len(edges) {
		return false
	}
	for i, o := range edges {
		l := e.linkAt(i)
		if l.uid != o.uid || g.resources[l.res] != o.res || l.name != o.name || g.at(l.owner).key != o.owner {
			return false
		}
	}
	return true
}

// get returns the state of key, if the graph has an object there.
func (g *graph) get(key string) (node, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	_, e := g.lookup(key)
	if e == nil || !e.present {
		return node{}, false
	}
	return g.nodeOf(e, ""), true
}

// owners returns the edges of the object at key (nil if none or unknown):
// get without the uid, which would be formatted anew.
func (g *graph) owners(key string) []edge {
	g.mu.RLock()
	defer g.mu.RUnlock()
	_, e := g.lookup(key)
	if e == nil || !e.present {
		return nil
	}
	return g.edgesOf(e)
}

// set records the state of key and returns its previous state (ok false if
// it is new).
func (g *graph) set(key string, n node) (old node, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	id := g.slotOf(key)
	e := g.at(id)
	ok = e.present
	sameUID := false
	if ok {
		// nodeOf gives back n.uid itself when it is the object's uid, so
		// comparing the strings compares pointers: the uid's bytes are
		// read once, not again by uidIs.
		old = g.nodeOf(e, n.uid)
		sameUID = old.uid == n.uid
		if !sameUID {
			g.byUID.remove(e, id)
		}
		if e.deletingDependents {
			g.waiting--
		}
	}
	if !sameUID || e.deletingDependents != n.deletingDependents {
		g.unsettleDependents(e)
	}
	if !ok || !g.sameLinks(e, n.owners) {
		g.unlinkLocked(id)
		links := make([]link, len(n.owners))
		for i, o := range n.owners {
			owner := g.slotOf(o.owner)
			links[i] = link{owner: owner, res: g.resID(o.res), name: o.name, uid: o.uid}
			g.at(owner).addDep(id)
		}
		e.setLinks(links) // e is still id's: entries never move
		e.ownersSolid = false
	}
	if !sameUID {
		e.setUID(n.uid)
	}
	e.present, e.deletingDependents = true, n.deletingDependents
	if e.deletingDependents {
		g.waiting++
	}
	if !sameUID {
		// An unchanged uid is indexed to id already (uids name one object).
		g.byUID.put(e, id)
	}
	return old, ok
}

// remove forgets key and returns the edges it had (ok false if unknown).
func (g *graph) remove(key string) (owners []edge, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	id, e := g.lookup(key)
	if e == nil || !e.present {
		return nil, false
	}
	owners = g.edgesOf(e)
	g.byUID.remove(e, id)
	if e.deletingDependents {
		g.waiting--
	}
	g.unsettleDependents(e)
	g.unlinkLocked(id)
	e.clearUID()
	e.present, e.deletingDependents = false, false
	g.release(id)
	return owners, true
}

// unsettleDependents clears ownersSolid on the dependents of e, whose
// presence, uid or foreground deletion is changing.
func (g *graph) unsettleDependents(e *entry) {
	e.eachDep(func(d slotID) { g.at(d).ownersSolid = false })
}

// unlinkLocked drops id's links, and the owner entries left with nothing.
func (g *graph) unlinkLocked(id slotID) {
	e := g.at(id)
	var owners []slotID
	for i := range e.numLinks() {
		owners = append(owners, e.linkAt(i).owner)
	}
	e.setLinks(nil)
	e.ownersSolid = false
	for _, o := range owners {
		g.at(o).removeDep(id)
	}
	for _, o := range owners {
		if o != id {
			g.release(o)
		}
	}
}

// dependentsOf returns the keys of the objects that reference owner key
// (with any uid), and the uid each reference names (the last, if one
// object references the key twice).
func (g *graph) dependentsOf(owner string) map[string]types.UID {
	g.mu.RLock()
	defer g.mu.RUnlock()
	id, e := g.lookup(owner)
	if e == nil || e.deps0 == 0 {
		return nil
	}
	out := map[string]types.UID{}
	e.eachDep(func(d slotID) {
		de := g.at(d)
		out[de.key] = de.linkUID(id)
	})
	return out
}

// hasDependents tells whether any object references the owner key with uid.
func (g *graph) hasDependents(owner string, uid types.UID) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	id, e := g.lookup(owner)
	if e == nil {
		return false
	}
	found := false
	e.eachDep(func(d slotID) {
		found = found || g.at(d).linkUID(id) == uid
	})
	return found
}

// linkUID is the uid e's reference to owner names: the last, if e
// references owner twice (as dependentsOf reports it).
func (e *entry) linkUID(owner slotID) types.UID {
	var uid types.UID
	for i := range e.numLinks() {
		if l := e.linkAt(i); l.owner == owner {
			uid = l.uid
		}
	}
	return uid
}

// deletingDependents tells whether the graph knows key as an owner waiting
// for its dependents (foreground deletion).
func (g *graph) deletingDependents(key string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.waiting == 0 {
		return false
	}
	_, e := g.lookup(key)
	return e != nil && e.present && e.deletingDependents
}

// solid tells whether the graph knows key as the object with uid, not
// waiting for its dependents.
func (g *graph) solid(key string, uid types.UID) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	_, e := g.lookup(key)
	return e != nil && e.solid(uid)
}

func (e *entry) solid(uid types.UID) bool {
	return e.present && !e.deletingDependents && e.uidIs(uid)
}

// keyOfUID returns the key of the object with uid, if the graph has it.
func (g *graph) keyOfUID(uid types.UID) (string, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	id, ok := g.byUID.get(uid)
	if !ok {
		return "", false
	}
	return g.at(id).key, true
}

func (g *graph) setRevision(rev int64) { g.rev.Store(rev) }

func (g *graph) revision() int64 { return g.rev.Load() }

// reset empties the graph before a new snapshot is loaded into it.
func (g *graph) reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.resetLocked()
}
