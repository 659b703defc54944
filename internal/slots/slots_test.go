package slots

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
)

type value struct {
	key string
	n   int
}

// TestTable checks ids and values through growth past several chunks,
// release and reuse: no id is 0, a value's address never changes while
// its key is held, a released id comes back zeroed for the next key.
func TestTable(t *testing.T) {
	tab := New[value, int32](func(v *value) *string { return &v.key })
	const n = 3*1024 + 7
	ptrs := map[string]*value{}
	for i := range n {
		k := fmt.Sprint("k", i)
		id, created := tab.Slot(k)
		if !created || id == 0 {
			t.Fatalf("Slot(%s) = %d, created %v", k, id, created)
		}
		v := tab.At(id)
		if v.key != k {
			t.Fatalf("Slot(%s) named its value %q", k, v.key)
		}
		v.n = i
		ptrs[k] = v
	}
	for k, p := range ptrs {
		id, v := tab.Lookup(k)
		if v == nil || tab.At(id) != p || v != p || p.key != k {
			t.Fatalf("%s moved or lost: %v %v", k, v != nil, p.key)
		}
		if again, created := tab.Slot(k); created || again != id {
			t.Fatalf("Slot(%s) again = %d, created %v; want %d", k, again, created, id)
		}
	}
	id, _ := tab.Lookup("k5")
	tab.Release("k5", id)
	if _, v := tab.Lookup("k5"); v != nil || tab.Len() != n-1 {
		t.Fatalf("released key still held (len %d)", tab.Len())
	}
	reused, _ := tab.Slot("new")
	if reused != id || *tab.At(reused) != (value{key: "new"}) {
		t.Fatalf("Slot after Release = %d holding %+v; want id %d zeroed and named", reused, *tab.At(reused), id)
	}
	held := 0
	tab.Values(func(v *value) bool { return v.key != "" }, func(*value) { held++ })
	if held != n {
		t.Fatalf("Values saw %d held, want %d", held, n)
	}
	keys := 0
	tab.Keys(func(string, int32) { keys++ })
	if keys != n {
		t.Fatalf("Keys saw %d, want %d", keys, n)
	}
}

// TestIndexBehavesAsAMap drives a Table (and so its Index) with random
// slots and releases over a small key space, against a map: the table
// fills and empties twice, so probe runs form, grow with the table and are
// emptied again, which exercises the moves of Index.free. Every key is
// looked up after each step.
func TestIndexBehavesAsAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tab := New[value, int32](func(v *value) *string { return &v.key })
	var keys []string
	for i := range 500 {
		keys = append(keys, fmt.Sprint("/registry/leases/kube-node-lease/node-", i))
	}
	model := map[string]int32{}
	for step := range 40_000 {
		k := keys[rng.IntN(len(keys))]
		filling := (step/10_000)%2 == 0
		if id, ok := model[k]; ok && (!filling || rng.IntN(4) == 0) {
			tab.Release(k, id)
			delete(model, k)
		} else if !ok && (filling || rng.IntN(4) == 0) {
			id, created := tab.Slot(k)
			if !created {
				t.Fatalf("step %d: Slot(%s) found a released key", step, k)
			}
			model[k] = id
		}
		for _, k := range keys {
			id, v := tab.Lookup(k)
			want, ok := model[k]
			if id != want || (v != nil) != ok || (ok && v.key != k) {
				t.Fatalf("step %d: Lookup(%s) = %d %v, want %d %v", step, k, id, v != nil, want, ok)
			}
		}
		if tab.Len() != len(model) {
			t.Fatalf("step %d: Len %d, want %d", step, tab.Len(), len(model))
		}
	}
	seen := map[string]int32{}
	tab.Keys(func(k string, id int32) { seen[k] = id })
	if !maps.Equal(seen, model) {
		t.Fatalf("Keys gave %d keys, want %d", len(seen), len(model))
	}
}
