package garbagecollector

import "testing"

// solid is the event loop's first test of an owner: it must be true only
// for the uid the graph holds at that key, and never for an owner in
// foreground deletion, else a dangling or blocking reference would not
// reach a worker.
func TestGraphSolidOnlyForTheCurrentSettledOwner(t *testing.T) {
	g := newGraph()
	const key = "/registry/minions/n1"
	if g.solid(key, "u1") {
		t.Fatal("an unknown key is solid")
	}
	g.set(key, node{uid: "u1"})
	if !g.solid(key, "u1") {
		t.Fatal("the owner with the referenced uid is not solid")
	}
	if g.solid(key, "u0") {
		t.Fatal("a predecessor's uid is solid")
	}
	g.set(key, node{uid: "u1", deletingDependents: true})
	if g.solid(key, "u1") {
		t.Fatal("an owner waiting for its dependents is solid")
	}
	g.remove(key)
	if g.solid(key, "u1") {
		t.Fatal("a removed owner is solid")
	}
}
