package garbagecollector

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/leasehold/leasehold/internal/registry"
)

// TestGraphBehavesAsMaps drives the graph and a model made of plain maps
// (the graph's former form: key → node, owner key → dependent key → uid,
// uid → key) with the same random sets and removes, among keys that own
// each other, self-references, references named twice, references that
// resolved to one of several resources or to none, UUID and other
// uids (the graph holds a canonical UUID as 16 bytes and any other uid as
// its string: upper-case and malformed UUIDs, the empty uid), objects
// whose uid changes between them, and compares every query after each
// step. It also checks that the arena frees every entry once nothing
// refers to it, and that an entry marked ownersSolid (as quiet marks a
// renewed object after checking its owners) is unmarked as soon as an
// owner stops being solid.
func TestGraphBehavesAsMaps(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	keys := []string{"/a", "/b", "/c", "/d", "/e", "/f"}
	// An object's uid is its key's own (uids are unique among objects); a
	// reference may name any.
	uidsOf := map[string][]types.UID{}
	var uids []types.UID
	for i, k := range keys {
		uidsOf[k] = []types.UID{types.UID("u1" + k), types.UID("u2" + k),
			types.UID(fmt.Sprintf("0d9f3a4e-0000-4000-8000-00000000000%d", i)), types.UID(fmt.Sprintf("0D9F3A4E-0000-4000-8000-0000000000A%d", i)),
			types.UID(fmt.Sprintf("ffffffff-ffff-4fff-bfff-fffffffffff%d", i)), types.UID(fmt.Sprintf("0d9f3a4e-0000-4000-8000-00000000000%d ", i)),
			types.UID(fmt.Sprintf("0d9f3a4e-0000-4000-8000_00000000000%d", i)), types.UID(fmt.Sprintf("0d9f3a4e-0000-4000-8000-0000000000%d", i))}
		uids = append(uids, uidsOf[k]...)
	}
	uidsOf[keys[0]] = append(uidsOf[keys[0]], "", "00000000-0000-0000-0000-000000000000")
	uids = append(uids, "", "00000000-0000-0000-0000-000000000000")
	// What a reference resolved to: the graph numbers the resources.
	resources := []*registry.Resource{nil, {}, {}, {}}
	names := []string{"", "a", "b"}
	g := newGraph()
	nodes := map[string]node{}
	for step := range 20000 {
		key := keys[rng.IntN(len(keys))]
		if rng.IntN(4) == 0 {
			_, wantOK := nodes[key]
			delete(nodes, key)
			if _, ok := g.remove(key); ok != wantOK {
				t.Fatalf("step %d: remove(%s) ok=%v, want %v", step, key, ok, wantOK)
			}
		} else {
			n := node{uid: uidsOf[key][rng.IntN(len(uidsOf[key]))], deletingDependents: rng.IntN(5) == 0}
			for range rng.IntN(3) {
				n.owners = append(n.owners, edge{owner: keys[rng.IntN(len(keys))], uid: uids[rng.IntN(len(uids))],
					res: resources[rng.IntN(len(resources))], name: names[rng.IntN(len(names))]})
			}
			want, wantOK := nodes[key]
			nodes[key] = n
			old, ok := g.set(key, n)
			if ok != wantOK || ok && !sameNode(old, want) {
				t.Fatalf("step %d: set(%s) returned %v %v, want %v %v", step, key, old, ok, want, wantOK)
			}
		}
		markOwnersSolid(g, keys[rng.IntN(len(keys))])
		checkGraph(t, fmt.Sprintf("step %d", step), g, nodes, keys, uids)
	}
	for _, k := range keys {
		g.remove(k)
	}
	if g.entries.Len() != 0 || g.waiting != 0 || g.byUID.len() != 0 {
		t.Fatalf("emptied graph keeps %d entries, %d waiting, %d uids", g.entries.Len(), g.waiting, g.byUID.len())
	}
}

// markOwnersSolid does what quiet does for a renewal of key: mark its
// entry ownersSolid if every owner is solid.
func markOwnersSolid(g *graph, key string) {
	_, e := g.lookup(key)
	if e == nil || !e.present {
		return
	}
	for i := range e.numLinks() {
		if l := e.linkAt(i); !g.at(l.owner).solid(l.uid) {
			return
		}
	}
	e.ownersSolid = true
}

func sameNode(a, b node) bool {
	return a.uid == b.uid && a.deletingDependents == b.deletingDependents && slices.Equal(a.owners, b.owners)
}

func checkGraph(t *testing.T, step string, g *graph, nodes map[string]node, keys []string, uids []types.UID) {
	t.Helper()
	deps := map[string]map[string]types.UID{}
	byUID := map[types.UID]string{}
	for k, n := range nodes {
		for _, e := range n.owners {
			if deps[e.owner] == nil {
				deps[e.owner] = map[string]types.UID{}
			}
			deps[e.owner][k] = e.uid
		}
	}
	for _, k := range keys {
		n, ok := nodes[k]
		got, gotOK := g.get(k)
		if ok != gotOK || ok && !sameNode(got, n) {
			t.Fatalf("%s: get(%s) = %v %v, want %v %v", step, k, got, gotOK, n, ok)
		}
		if ok {
			byUID[n.uid] = k
		}
		if d := g.dependentsOf(k); !maps.Equal(d, deps[k]) {
			t.Fatalf("%s: dependentsOf(%s) = %v, want %v", step, k, d, deps[k])
		}
		if g.deletingDependents(k) != (ok && n.deletingDependents) {
			t.Fatalf("%s: deletingDependents(%s) wrong", step, k)
		}
		for _, u := range uids {
			if g.solid(k, u) != (ok && n.uid == u && !n.deletingDependents) {
				t.Fatalf("%s: solid(%s, %s) wrong", step, k, u)
			}
			want := false
			for _, du := range deps[k] {
				want = want || du == u
			}
			if g.hasDependents(k, u) != want {
				t.Fatalf("%s: hasDependents(%s, %s) = %v, want %v", step, k, u, !want, want)
			}
		}
	}
	for _, u := range uids {
		k, ok := g.keyOfUID(u)
		_, want := byUID[u]
		if ok != want || ok && nodes[k].uid != u {
			t.Fatalf("%s: keyOfUID(%s) = %s %v, want %s %v", step, u, k, ok, byUID[u], want)
		}
	}
	g.entries.Keys(func(k string, id slotID) {
		e := g.at(id)
		if e.key != k {
			t.Fatalf("%s: index %s → entry of %s", step, k, e.key)
		}
		if _, ok := nodes[k]; !ok && deps[k] == nil {
			t.Fatalf("%s: entry %s kept with no object and no dependents", step, k)
		}
		for i := range e.numLinks() {
			if l := e.linkAt(i); e.ownersSolid && !g.at(l.owner).solid(l.uid) {
				t.Fatalf("%s: %s marked ownersSolid, but its owner %s is not", step, k, g.at(l.owner).key)
			}
		}
	})
}
