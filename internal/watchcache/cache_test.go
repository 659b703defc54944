package watchcache

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestListAndGetServeTheListedState(t *testing.T) {
	s := newStoreT(t)
	// Created out of key order, spread over two namespaces, more than one list page.
	n := listPageSize + 7
	for i := n - 1; i >= 0; i-- {
		ns := "a"
		if i%2 == 1 {
			ns = "b"
		}
		create(t, s, ns, fmt.Sprintf("l%05d", i), "h", nil)
	}
	storeRev, _ := s.CurrentRevision(context.Background())
	c := startCache(t, s, Options{})

	if got := c.Revision(); got != storeRev {
		t.Fatalf("Revision() = %d, want the store's %d", got, storeRev)
	}
	all, rev := c.List(leasePrefix, nil)
	if rev != storeRev || len(all) != n {
		t.Fatalf("List = %d objects at %d, want %d at %d", len(all), rev, n, storeRev)
	}
	bOnly, _ := c.List(leasePrefix+"b/", nil)
	if len(bOnly) != n/2 {
		t.Fatalf("List(b/) = %d objects, want %d", len(bOnly), n/2)
	}
	prevKey := ""
	for _, o := range all {
		l := o.(interface {
			GetNamespace() string
			GetName() string
		})
		key := leaseKey(l.GetNamespace(), l.GetName())
		if key <= prevKey {
			t.Fatalf("List not in key order: %q after %q", key, prevKey)
		}
		prevKey = key
	}

	obj, ok := c.Get(leaseKey("b", "l00001"))
	if !ok {
		t.Fatal("Get of an existing key: not found")
	}
	kv, _ := s.Get(context.Background(), leaseKey("b", "l00001"))
	if rvOf(t, obj) != kv.ModRevision {
		t.Fatalf("resourceVersion = %d, want ModRevision %d", rvOf(t, obj), kv.ModRevision)
	}
	if _, ok := c.Get(leaseKey("b", "missing")); ok {
		t.Fatal("Get of a missing key found something")
	}
	if under, ok := c.GetUnder(leasePrefix+"b/", "l00001"); !ok || under != obj {
		t.Fatalf("GetUnder(prefix, name) = %v, %v; want Get's object", under, ok)
	}
	long := strings.Repeat("n", 300) // past GetUnder's stack buffer
	if _, ok := c.GetUnder(leasePrefix+"b/", long); ok {
		t.Fatal("GetUnder of a missing long name found something")
	}
	if _, ok := c.GetUnder(leasePrefix+"b/", "missing"); ok {
		t.Fatal("GetUnder of a missing key found something")
	}

	pred := func(o runtime.Object) bool { return holderOf(o) == "x" }
	update(t, s, "a", "l00000", "x", nil)
	rev = remove(t, s, "a", "l00002")
	if err := c.WaitForRevision(testCtx(t), rev); err != nil {
		t.Fatalf("WaitForRevision: %v", err)
	}
	matched, at := c.List(leasePrefix, pred)
	if len(matched) != 1 || at != rev || holderOf(matched[0]) != "x" {
		t.Fatalf("List with predicate = %d objects at %d, want 1 at %d", len(matched), at, rev)
	}
	if _, ok := c.Get(leaseKey("a", "l00002")); ok {
		t.Fatal("deleted key still in the cache")
	}
}

func TestWaitForRevisionBlocksUntilApplied(t *testing.T) {
	s := newStoreT(t)
	c := startCache(t, s, Options{})
	target := c.Revision() + 2

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.WaitForRevision(ctx, target); err == nil {
		t.Fatal("WaitForRevision returned before the revision existed")
	}

	done := make(chan error, 1)
	go func() { done <- c.WaitForRevision(testCtx(t), target) }()
	create(t, s, "a", "one", "h", nil)
	select {
	case err := <-done:
		t.Fatalf("WaitForRevision returned after one of two writes: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	create(t, s, "a", "two", "h", nil)
	if err := <-done; err != nil {
		t.Fatalf("WaitForRevision: %v", err)
	}
	if c.Revision() < target {
		t.Fatalf("Revision() = %d after waiting for %d", c.Revision(), target)
	}
}

func TestWaitReadyFailsWhenNotRunning(t *testing.T) {
	c := New(newStoreT(t), Options{Prefix: "/registry/", Decode: decodeLease, Logger: quietLogger()})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := c.WaitReady(ctx); err == nil {
		t.Fatal("WaitReady succeeded on a cache that never ran")
	}
}

// The window's events name their key by the cache entry's string: each
// write brings an equal key of its own, which the window would otherwise
// keep alive for every event it holds.
func TestWindowEventsShareTheEntryKey(t *testing.T) {
	s := newStoreT(t)
	create(t, s, "ns", "l", "h0", nil)
	c := startCache(t, s, Options{})
	var rev int64
	for i := range 3 {
		rev = update(t, s, "ns", "l", fmt.Sprintf("h%d", i+1), nil)
	}
	rev = max(rev, remove(t, s, "ns", "l"))
	if err := c.WaitForRevision(testCtx(t), rev); err != nil {
		t.Fatal(err)
	}
	create(t, s, "ns", "l", "h5", nil)
	rev = update(t, s, "ns", "l", "h6", nil)
	if err := c.WaitForRevision(testCtx(t), rev); err != nil {
		t.Fatal(err)
	}

	c.mu.RLock()
	defer c.mu.RUnlock()
	e := c.objects[leaseKey("ns", "l")]
	var keys []string
	for seq := c.events.oldestSeq(); seq < c.events.next; seq++ {
		keys = append(keys, c.events.at(seq).key)
	}
	if len(keys) != 6 {
		t.Fatalf("window holds %d events, want 6 (3 updates, a delete, a create and an update)", len(keys))
	}
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	// The updates and the delete share the first entry's key; the create
	// and the update after it the second entry's.
	for i := 1; i < 4; i++ {
		if !same(keys[i], keys[0]) {
			t.Errorf("event %d does not share the first entry's key", i)
		}
	}
	if !same(keys[4], e.key) || !same(keys[5], e.key) {
		t.Error("the events after the re-create do not share the second entry's key")
	}
	if same(keys[0], e.key) {
		t.Fatal("both entries have the same key string: the test shows nothing")
	}
}
