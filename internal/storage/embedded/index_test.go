package embedded

import (
	"strings"
	"testing"
	"unsafe"
)

// TestKeyIndexKeepsCreateKey pins why keyIndex exists: an update of a live
// key keeps the key string the create stored (shared with the watch cache),
// instead of the updating request's equal copy.
func TestKeyIndexKeepsCreateKey(t *testing.T) {
	x := newKeyIndex()
	created := strings.Clone("/registry/leases/kube-node-lease/n1")
	x.set(created, indexEntry{modRev: 1, createRev: 1})
	updating := strings.Clone(created)
	x.set(updating, indexEntry{modRev: 2, createRev: 1})
	if e, ok := x.get(created); !ok || e != (indexEntry{modRev: 2, createRev: 1}) {
		t.Fatalf("get after update = %+v, %v; want revisions 2, 1", e, ok)
	}
	for k := range x.slots {
		if unsafe.StringData(k) != unsafe.StringData(created) {
			t.Fatal("the index holds the update's key string, not the create's")
		}
	}
}

func TestKeyIndexDeleteAndReuse(t *testing.T) {
	x := newKeyIndex()
	x.set("a", indexEntry{modRev: 1, createRev: 1})
	x.set("b", indexEntry{modRev: 2, createRev: 2})
	x.delete("a")
	x.delete("missing")
	if _, ok := x.get("a"); ok {
		t.Fatal("a deleted key is still live")
	}
	if x.len() != 1 {
		t.Fatalf("len = %d, want 1", x.len())
	}
	x.set("c", indexEntry{modRev: 3, createRev: 3})
	if len(x.entries) != 2 {
		t.Fatalf("%d entries after a delete and a create, want the freed one reused (2)", len(x.entries))
	}
	for key, want := range map[string]indexEntry{"b": {2, 2}, "c": {3, 3}} {
		if e, ok := x.get(key); !ok || e != want {
			t.Fatalf("get(%q) = %+v, %v; want %+v", key, e, ok, want)
		}
	}
	x.reset()
	if _, ok := x.get("b"); ok || x.len() != 0 {
		t.Fatal("reset left a key")
	}
	x.set("d", indexEntry{modRev: 4, createRev: 4})
	if e, ok := x.get("d"); !ok || e.modRev != 4 || x.len() != 1 {
		t.Fatalf("get(d) after reset = %+v, %v", e, ok)
	}
}
