package storagetest

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/storage"
)

func watch(ctx context.Context, t *testing.T, s storage.Interface, prefix string, from int64) <-chan storage.Event {
	t.Helper()
	ch, err := s.Watch(ctx, prefix, from)
	if err != nil {
		t.Fatalf("Watch(%q, %d): %v", prefix, from, err)
	}
	return Events(ctx, t, ch)
}

// WatchEvents is s.Watch with its batches passed on one event at a time
// (Events), for tests that read a watch event by event.
func WatchEvents(ctx context.Context, t testing.TB, s storage.Interface, prefix string, from int64, opts ...storage.WatchOption) (<-chan storage.Event, error) {
	batches, err := s.Watch(ctx, prefix, from, opts...)
	if err != nil {
		return nil, err
	}
	return Events(ctx, t, batches), nil
}

// Events passes a watch's events on one at a time, checking that every
// batch keeps the interface's promise: not empty, in revision order, each
// after the batch before it. It closes its channel when the watch's does;
// once ctx ends it drops the events it still gets, so the test learns that
// the watch closes without having to read them.
func Events(ctx context.Context, t testing.TB, batches <-chan []storage.Event) <-chan storage.Event {
	out := make(chan storage.Event)
	go func() {
		defer close(out)
		var last int64
		for batch := range batches {
			if len(batch) == 0 {
				t.Errorf("watch delivered an empty batch after revision %d", last)
			}
			for _, ev := range batch {
				if ev.Type != storage.EventProgress && ev.Revision <= last {
					t.Errorf("watch delivered revision %d after %d", ev.Revision, last)
				}
				if ev.Type != storage.EventProgress {
					last = ev.Revision
				}
				select {
				case out <- ev:
				case <-ctx.Done():
				}
			}
		}
	}()
	return out
}

func testWatchFromRevision(t *testing.T, s storage.Interface) {
	ctx := testContext(t)
	p := prefixFor(t)
	start := currentRevision(ctx, t, s)
	a1 := mustCreate(ctx, t, s, p+"a", "a1")
	a2 := mustUpdate(ctx, t, s, p+"a", a1, "a2")
	b1 := mustCreate(ctx, t, s, p+"b", "b1")
	_, delA := mustDelete(ctx, t, s, p+"a", 0)
	b2 := mustUpdate(ctx, t, s, p+"b", b1, "b2")
	all := []wantEvent{
		{typ: storage.EventPut, key: p + "a", value: "a1", rev: a1, createRev: a1},
		{typ: storage.EventPut, key: p + "a", value: "a2", prevValue: "a1", hasPrev: true, rev: a2, createRev: a1},
		{typ: storage.EventPut, key: p + "b", value: "b1", rev: b1, createRev: b1},
		{typ: storage.EventDelete, key: p + "a", prevValue: "a2", hasPrev: true, rev: delA, createRev: a1},
		{typ: storage.EventPut, key: p + "b", value: "b2", prevValue: "b1", hasPrev: true, rev: b2, createRev: b1},
	}

	// Every event after start, replayed from history.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := watch(wctx, t, s, p, start)
	receive(t, ch, all)

	// The replay continues into live events without a gap or a duplicate.
	b3 := mustUpdate(ctx, t, s, p+"b", b2, "b3")
	receive(t, ch, []wantEvent{
		{typ: storage.EventPut, key: p + "b", value: "b3", prevValue: "b2", hasPrev: true, rev: b3, createRev: b1},
	})
	expectQuiet(t, ch)

	// Starting in the middle skips exactly the events at or before it.
	mid := watch(wctx, t, s, p, a2)
	receive(t, mid, all[2:])
	expectQuiet(t, ch)
}

func testWatchPrefix(t *testing.T, s storage.Interface) {
	ctx := testContext(t)
	p := prefixFor(t)
	start := currentRevision(ctx, t, s)
	in1 := mustCreate(ctx, t, s, p+"x/1", "in")
	mustCreate(ctx, t, s, p+"xy/1", "out") // shares the string prefix "x", not "x/"
	mustCreate(ctx, t, s, p+"x", "out")

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := watch(wctx, t, s, p+"x/", start)
	receive(t, ch, []wantEvent{{typ: storage.EventPut, key: p + "x/1", value: "in", rev: in1, createRev: in1}})

	mustCreate(ctx, t, s, p+"xy/2", "out")
	in2 := mustCreate(ctx, t, s, p+"x/2", "in")
	receive(t, ch, []wantEvent{{typ: storage.EventPut, key: p + "x/2", value: "in", rev: in2, createRev: in2}})
	expectQuiet(t, ch)
}

func testWatchLive(t *testing.T, s storage.Interface) {
	ctx := testContext(t)
	p := prefixFor(t)
	wctx, cancel := context.WithCancel(ctx)
	ch := watch(wctx, t, s, p, currentRevision(ctx, t, s))
	expectQuiet(t, ch)

	const n = 50
	want := make([]wantEvent, 0, n)
	var prev int64
	for i := range n {
		if i == 0 {
			prev = mustCreate(ctx, t, s, p+"k", "0")
			want = append(want, wantEvent{typ: storage.EventPut, key: p + "k", value: "0", rev: prev, createRev: prev})
			continue
		}
		created := want[0].rev
		rev := mustUpdate(ctx, t, s, p+"k", prev, string(rune('0'+i%10)))
		want = append(want, wantEvent{typ: storage.EventPut, key: p + "k", value: string(rune('0' + i%10)),
			prevValue: string(rune('0' + (i-1)%10)), hasPrev: true, rev: rev, createRev: created})
		prev = rev
	}
	receive(t, ch, want)

	// Ending the context closes the channel.
	cancel()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("watch channel still open 10s after its context ended")
		}
	}
}

func testCompact(t *testing.T, s storage.Interface) {
	ctx := testContext(t)
	p := prefixFor(t)
	first := mustCreate(ctx, t, s, p+"a", "a1")
	a2 := mustUpdate(ctx, t, s, p+"a", first, "a2")
	b := mustCreate(ctx, t, s, p+"b", "b1")
	a3 := mustUpdate(ctx, t, s, p+"a", a2, "a3")
	c := mustCreate(ctx, t, s, p+"c", "c1")

	if err := s.Compact(ctx, b); err != nil {
		t.Fatalf("Compact(%d): %v", b, err)
	}
	compacted, err := s.CompactedRevision(ctx)
	if err != nil {
		t.Fatalf("CompactedRevision: %v", err)
	}
	if compacted != b {
		t.Fatalf("CompactedRevision = %d, want %d", compacted, b)
	}

	_, err = s.List(ctx, p, storage.ListOptions{Revision: first})
	expectErr(t, "List below the compacted revision", err, storage.ErrCompacted)
	_, err = s.Watch(ctx, p, first-1)
	expectErr(t, "Watch from below the compacted revision", err, storage.ErrCompacted)

	// The compacted revision itself and everything after it stay readable.
	got, _ := listAll(ctx, t, s, p, b)
	if len(got) != 2 {
		t.Fatalf("List at the compacted revision %d = %v, want a and b", b, got)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := watch(wctx, t, s, p, b)
	receive(t, ch, []wantEvent{
		{typ: storage.EventPut, key: p + "a", value: "a3", prevValue: "a2", hasPrev: true, rev: a3, createRev: first},
		{typ: storage.EventPut, key: p + "c", value: "c1", rev: c, createRev: c},
	})

	// Current values survive compaction.
	checkKV(t, "Get after Compact", mustGet(ctx, t, s, p+"a"), p+"a", "a3", a3, first)
	got, _ = listAll(ctx, t, s, p, 0)
	if len(got) != 3 {
		t.Fatalf("List after Compact = %v, want a, b and c", got)
	}
}

// testWatchWithoutPrevValue: a watch that does not want previous values gets
// the same events, each PrevValue either nil or right, both replayed and
// live; a watch that wants them, live at the same time, still gets them.
func testWatchWithoutPrevValue(t *testing.T, s storage.Interface) {
	ctx := testContext(t)
	p := prefixFor(t)
	start := currentRevision(ctx, t, s)
	a1 := mustCreate(ctx, t, s, p+"a", "a1")
	a2 := mustUpdate(ctx, t, s, p+"a", a1, "a2")
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	leanBatches, err := s.Watch(wctx, p, start, storage.WithoutPrevValue)
	if err != nil {
		t.Fatalf("Watch(%q, %d, WithoutPrevValue): %v", p, start, err)
	}
	lean := Events(wctx, t, leanBatches)
	full := watch(wctx, t, s, p, start)
	replayed := []wantEvent{
		{typ: storage.EventPut, key: p + "a", value: "a1", rev: a1, createRev: a1},
		{typ: storage.EventPut, key: p + "a", value: "a2", prevValue: "a1", hasPrev: true, rev: a2, createRev: a1},
	}
	receiveWithoutPrev(t, lean, replayed)
	receive(t, full, replayed)

	a3 := mustUpdate(ctx, t, s, p+"a", a2, "a3")
	_, del := mustDelete(ctx, t, s, p+"a", a3)
	live := []wantEvent{
		{typ: storage.EventPut, key: p + "a", value: "a3", prevValue: "a2", hasPrev: true, rev: a3, createRev: a1},
		{typ: storage.EventDelete, key: p + "a", prevValue: "a3", hasPrev: true, rev: del, createRev: a1},
	}
	receiveWithoutPrev(t, lean, live)
	receive(t, full, live)
	expectQuiet(t, lean)
}
