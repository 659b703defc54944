package slots

import (
	"fmt"
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
	tab := New[value, int32](func(v *value, key string) { v.key = key })
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
