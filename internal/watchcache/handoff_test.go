package watchcache

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/storage"
)

// adoptLease is the tests' Options.Adopt: it takes a handed-over Lease and
// sets its resourceVersion, as objects.Form's adopter does.
func adoptLease(_ string, obj runtime.Object, rev int64) (runtime.Object, bool) {
	l, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return nil, false
	}
	l.ResourceVersion = strconv.FormatInt(rev, 10)
	return l, true
}

// TestExpectHandsTheWritersObjectToItsEvent checks the hand-off on every
// store: the object given to Expect before a write is the very object the
// cache publishes for that write, once, with its resourceVersion set; a
// write nobody handed an object for, a handed object whose write failed and
// was withdrawn, and an object handed for other bytes are all decoded from
// the stored value instead.
func TestExpectHandsTheWritersObjectToItsEvent(t *testing.T) {
	onEachBackend(t, func(t *testing.T, s storage.Interface) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := startCache(t, s, Options{Adopt: adoptLease})
		key := leaseKey("ns", "a")
		rev, err := s.Create(ctx, key, encodeLease(t, "ns", "a", "h0", nil))
		if err != nil {
			t.Fatal(err)
		}
		// published waits for the cache to apply rev and returns the
		// object it holds for key.
		published := func(rev int64) runtime.Object {
			t.Helper()
			if err := c.WaitForRevision(ctx, rev); err != nil {
				t.Fatalf("waiting for revision %d: %v", rev, err)
			}
			obj, ok := c.Get(key)
			if !ok {
				t.Fatalf("%s not in the cache at revision %d", key, rev)
			}
			return obj
		}
		decodedAt := func(obj runtime.Object, rev int64, holder string) {
			t.Helper()
			if holderOf(obj) != holder || rvOf(t, obj) != rev {
				t.Fatalf("cache holds holder %q at %d, want %q at %d", holderOf(obj), rvOf(t, obj), holder, rev)
			}
		}

		// Handed over: the writer's own object, its resourceVersion set.
		value := encodeLease(t, "ns", "a", "h1", nil)
		handed, err := decodeLease(key, value, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		c.Expect(key, value, handed)
		if rev, err = s.Update(ctx, key, rev, value); err != nil {
			t.Fatal(err)
		}
		got := published(rev)
		if got != handed {
			t.Fatalf("the cache decoded the write instead of taking the writer's object")
		}
		decodedAt(got, rev, "h1")

		// Not handed over: decoded.
		if rev, err = s.Update(ctx, key, rev, encodeLease(t, "ns", "a", "h2", nil)); err != nil {
			t.Fatal(err)
		}
		decodedAt(published(rev), rev, "h2")

		// Handed over, but the write failed and the writer withdrew it:
		// a later write of the same bytes is decoded, not given the
		// withdrawn object.
		value = encodeLease(t, "ns", "a", "h3", nil)
		withdrawn, err := decodeLease(key, value, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		token := c.Expect(key, value, withdrawn)
		if _, err := s.Update(ctx, key, rev-1, value); !errors.Is(err, storage.ErrConflict) {
			t.Fatalf("update at a stale revision: %v, want a conflict", err)
		}
		c.Withdraw(key, token)
		if rev, err = s.Update(ctx, key, rev, value); err != nil {
			t.Fatal(err)
		}
		if got := published(rev); got == withdrawn {
			t.Fatalf("the cache took an object its writer withdrew")
		} else {
			decodedAt(got, rev, "h3")
		}

		// Handed over for other bytes than those written: decoded.
		stale, err := decodeLease(key, encodeLease(t, "ns", "a", "other", nil), 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		c.Expect(key, encodeLease(t, "ns", "a", "other", nil), stale)
		if rev, err = s.Update(ctx, key, rev, encodeLease(t, "ns", "a", "h4", nil)); err != nil {
			t.Fatal(err)
		}
		if got := published(rev); got == stale {
			t.Fatalf("the cache took an object handed over for other bytes")
		} else {
			decodedAt(got, rev, "h4")
		}
	})
}

// TestHandoffKeepsTheKeysTwoNewestObjects checks the table's slots: a
// writer that hands over its next write before the event of the previous
// one is claimed still has both claimed, each by its own bytes; a third
// pushes the oldest out; a withdrawn object is never claimed, and the
// table is empty once everything was claimed or withdrawn.
func TestHandoffKeepsTheKeysTwoNewestObjects(t *testing.T) {
	c := New(nil, Options{Prefix: "/registry/", Decode: decodeLease, Adopt: adoptLease, Logger: quietLogger()})
	key := leaseKey("ns", "a")
	objs := map[string]runtime.Object{}
	expect := func(holder string) uint64 {
		value := encodeLease(t, "ns", "a", holder, nil)
		obj, err := decodeLease(key, value, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		objs[holder] = obj
		return c.Expect(key, value, obj)
	}
	claim := func(holder string) runtime.Object {
		return c.handoffs.claim(key, encodeLease(t, "ns", "a", holder, nil))
	}
	expect("h1")
	expect("h2")
	if got := claim("h1"); got != objs["h1"] {
		t.Fatalf("the older of two pending objects was not claimed")
	}
	if got := claim("h2"); got != objs["h2"] {
		t.Fatalf("the newer of two pending objects was not claimed")
	}
	if got := claim("h2"); got != nil {
		t.Fatalf("an object was claimed twice")
	}
	expect("h3")
	expect("h4")
	expect("h5")
	if got := claim("h3"); got != nil {
		t.Fatalf("the oldest of three objects was kept")
	}
	withdrawn := expect("h6") // pushes h4 out
	c.Withdraw(key, withdrawn)
	if got := claim("h6"); got != nil {
		t.Fatalf("a withdrawn object was claimed")
	}
	if got := claim("h5"); got != objs["h5"] {
		t.Fatalf("withdrawing one object lost another")
	}
	if n := c.handoffs.pending.Load(); n != 0 || len(c.handoffs.byKey) != 0 {
		t.Fatalf("table holds %d objects under %d keys, want none", n, len(c.handoffs.byKey))
	}
}

// TestHandoffAllocatesNothingPerWrite checks handoff.go's claim: once a key
// has been handed over before, a write's Expect and its event's claim cost
// no allocation (the key's slots live inline in the map).
func TestHandoffAllocatesNothingPerWrite(t *testing.T) {
	c := New(nil, Options{Prefix: "/registry/", Decode: decodeLease, Adopt: adoptLease, Logger: quietLogger()})
	key := leaseKey("ns", "a")
	value := encodeLease(t, "ns", "a", "h", nil)
	obj, err := decodeLease(key, value, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Expect(key, value, obj)
	c.handoffs.claim(key, value)
	allocs := testing.AllocsPerRun(1000, func() {
		c.Expect(key, value, obj)
		if c.handoffs.claim(key, value) != obj {
			t.Fatal("not claimed")
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per handed-over write, want 0", allocs)
	}
}
