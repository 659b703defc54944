package garbagecollector

import (
	"maps"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestDependentSetBehavesAsAMap drives a dependentSet and a plain map with
// the same changes, through the one-inline and the map forms, and compares.
func TestDependentSetBehavesAsAMap(t *testing.T) {
	var s dependentSet
	want := map[string]types.UID{}
	check := func(step string) {
		t.Helper()
		got := s.copy()
		if len(want) == 0 {
			if got != nil || s.len() != 0 {
				t.Fatalf("%s: got %v (len %d), want empty", step, got, s.len())
			}
			return
		}
		if !maps.Equal(got, want) || s.len() != len(want) {
			t.Fatalf("%s: got %v (len %d), want %v", step, got, s.len(), want)
		}
		for _, u := range want {
			if !s.references(u) {
				t.Fatalf("%s: references(%s) = false", step, u)
			}
		}
		if s.references("nobody") {
			t.Fatalf("%s: references a uid no dependent names", step)
		}
	}
	put := func(k string, u types.UID) { s.put(k, u); want[k] = u }
	remove := func(k string) { s.remove(k); delete(want, k) }

	check("empty")
	put("a", "u1")
	check("one")
	put("a", "u2")
	check("one, re-pointed")
	remove("missing")
	check("one, removing another key")
	remove("a")
	check("emptied")
	put("a", "u1")
	put("b", "u1")
	check("two")
	put("c", "u3")
	remove("a")
	check("two of three left")
	remove("b")
	remove("c")
	check("emptied from the map form")
	put("d", "u4")
	check("one again, in the map form")

	copied := s.copy()
	copied["e"] = "u5"
	if s.len() != 1 {
		t.Fatal("changing a copy changed the set")
	}
}
