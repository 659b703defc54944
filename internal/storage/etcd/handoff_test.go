package etcd

import (
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/storage/etcd/etcdtest"
)

// handedObject stands for a decoded object; tests compare pointers.
type handedObject struct{ name string }

// TestUpdateObjectHandsOverToWatch checks storage.ObjectWriter on etcd: the
// object of a successful UpdateObject rides on its own put event, once;
// a plain Update, a failed UpdateObject and another replica's write
// (different bytes, or the same bytes through a Store that handed nothing
// over) carry none.
func TestUpdateObjectHandsOverToWatch(t *testing.T) {
	ctx := testContext(t)
	endpoint := etcdtest.Start(t, etcdtest.Options{}).Endpoint
	s := newTestStore(t, endpoint, "")
	other := newTestStore(t, endpoint, "")
	const key = "/registry/leases/ns/a"
	rev, err := s.Create(ctx, key, []byte("v0"))
	if err != nil {
		t.Fatal(err)
	}
	events, err := s.Watch(ctx, "/registry/leases/", rev, storage.WithoutPrevValue)
	if err != nil {
		t.Fatal(err)
	}
	next := func(wantValue string, wantObj any) int64 {
		t.Helper()
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("watch ended")
			}
			if ev.Type != storage.EventPut || string(ev.Value) != wantValue || ev.Object != wantObj {
				t.Fatalf("event %v %q with object %v, want a put of %q with object %v", ev.Type, ev.Value, ev.Object, wantValue, wantObj)
			}
			return ev.Revision
		case <-time.After(10 * time.Second):
			t.Fatalf("no event for %q", wantValue)
		}
		return 0
	}

	a := &handedObject{"a"}
	if rev, err = s.UpdateObject(ctx, key, rev, []byte("v1"), a); err != nil {
		t.Fatal(err)
	}
	if got := next("v1", a); got != rev {
		t.Fatalf("event at revision %d, UpdateObject answered %d", got, rev)
	}
	if rev, err = s.Update(ctx, key, rev, []byte("v2")); err != nil {
		t.Fatal(err)
	}
	next("v2", nil)

	// A conflicting UpdateObject takes its object back: the same bytes
	// written next by another replica arrive without it.
	if _, err := s.UpdateObject(ctx, key, rev-1, []byte("v3"), &handedObject{"lost"}); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("UpdateObject at a stale revision: %v, want ErrConflict", err)
	}
	if rev, err = other.UpdateObject(ctx, key, rev, []byte("v3"), &handedObject{"other's"}); err != nil {
		t.Fatal(err)
	}
	next("v3", nil)

	// An object waiting for its event is not taken by a write of other
	// bytes to the same key: registered, then overtaken by another
	// replica's write, its own transaction fails and nothing carries it.
	b := &handedObject{"b"}
	seq := s.handoffs.put(key, []byte("v5"), b)
	if rev, err = other.Update(ctx, key, rev, []byte("v4")); err != nil {
		t.Fatal(err)
	}
	next("v4", nil)
	s.handoffs.withdraw(key, seq)

	c := &handedObject{"c"}
	if _, err = s.UpdateObject(ctx, key, rev, []byte("v5"), c); err != nil {
		t.Fatal(err)
	}
	next("v5", c)
	if n := s.handoffs.pending.Load(); n != 0 {
		t.Fatalf("%d handed-over objects left after every event arrived", n)
	}
}
