package embedded

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/storage/storagetest"
)

// With no watcher that wants previous values, the committer reads none back:
// a live update whose previous write was committed in an earlier batch
// reaches a WithoutPrevValue watcher with PrevValue nil. (Reading them on
// every write once cost ~7% of a renewal.)
func TestLiveEventsReadNoPrevValueUnlessWanted(t *testing.T) {
	ctx := testCtx(t)
	s := openTest(t, Options{})
	rev, err := s.Create(ctx, "/k/a", []byte("a1"))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := storagetest.WatchEvents(wctx, t, s, "/k/", rev, storage.WithoutPrevValue)
	if err != nil {
		t.Fatal(err)
	}
	waitLive(t, s, 1)
	if _, err := s.Update(ctx, "/k/a", rev, []byte("a2")); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-ch:
		if string(ev.Value) != "a2" || ev.PrevValue != nil {
			t.Fatalf("live event %+v, want value a2 and no previous value", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no live event")
	}
}
