package embedded

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/storage"
)

// UpdateObject's object rides on the live event of the write, and only
// there: a watch that replays the write from the log gets the value alone.
func TestUpdateObjectReachesLiveWatchersOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := openTest(t, Options{})
	created, err := s.Create(ctx, "/registry/leases/ns/a", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	live, err := s.Watch(ctx, "/registry/leases/", created)
	if err != nil {
		t.Fatal(err)
	}
	obj := &struct{ name string }{"decoded v2"}
	rev, err := s.UpdateObject(ctx, "/registry/leases/ns/a", created, []byte("v2"), obj)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, "/registry/leases/ns/a", rev, []byte("v3")); err != nil {
		t.Fatal(err)
	}
	next := func(w <-chan storage.Event) storage.Event {
		t.Helper()
		select {
		case ev := <-w:
			return ev
		case <-ctx.Done():
			t.Fatal("no event")
		}
		return storage.Event{}
	}
	if ev := next(live); ev.Object != obj || string(ev.Value) != "v2" {
		t.Errorf("live event %+v, want the written object", ev)
	}
	if ev := next(live); ev.Object != nil {
		t.Errorf("an Update's event carries object %v", ev.Object)
	}
	replay, err := s.Watch(ctx, "/registry/leases/", created)
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(replay); ev.Object != nil || string(ev.Value) != "v2" {
		t.Errorf("replayed event %+v, want the value without an object", ev)
	}
}
