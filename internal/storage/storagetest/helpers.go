package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/storage"
)

// prefixFor gives each subtest its own key space, so drivers on a shared
// server do not see keys another subtest left behind.
func prefixFor(t *testing.T) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return "/registry/storagetest/" + name + "/"
}

func currentRevision(ctx context.Context, t *testing.T, s storage.Interface) int64 {
	t.Helper()
	rev, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatalf("CurrentRevision: %v", err)
	}
	return rev
}

func mustCreate(ctx context.Context, t *testing.T, s storage.Interface, key, value string) int64 {
	t.Helper()
	rev, err := s.Create(ctx, key, []byte(value))
	if err != nil {
		t.Fatalf("Create(%q): %v", key, err)
	}
	return rev
}

func mustUpdate(ctx context.Context, t *testing.T, s storage.Interface, key string, expected int64, value string) int64 {
	t.Helper()
	rev, err := s.Update(ctx, key, expected, []byte(value))
	if err != nil {
		t.Fatalf("Update(%q, %d): %v", key, expected, err)
	}
	return rev
}

func mustDelete(ctx context.Context, t *testing.T, s storage.Interface, key string, expected int64) (storage.KeyValue, int64) {
	t.Helper()
	kv, rev, err := s.Delete(ctx, key, expected)
	if err != nil {
		t.Fatalf("Delete(%q, %d): %v", key, expected, err)
	}
	return kv, rev
}

func mustGet(ctx context.Context, t *testing.T, s storage.Interface, key string) storage.KeyValue {
	t.Helper()
	kv, err := s.Get(ctx, key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return kv
}

func expectErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

// checkKV compares every field of a KeyValue.
func checkKV(t *testing.T, what string, got storage.KeyValue, key, value string, modRev, createRev int64) {
	t.Helper()
	if got.Key != key || string(got.Value) != value || got.ModRevision != modRev || got.CreateRevision != createRev {
		t.Fatalf("%s: got {%q %q mod=%d create=%d}, want {%q %q mod=%d create=%d}",
			what, got.Key, got.Value, got.ModRevision, got.CreateRevision, key, value, modRev, createRev)
	}
}

// listAll lists prefix at revision and returns "key=value@mod" strings, which
// make failures readable.
func listAll(ctx context.Context, t *testing.T, s storage.Interface, prefix string, rev int64) ([]string, storage.ListResult) {
	t.Helper()
	res, err := s.List(ctx, prefix, storage.ListOptions{Revision: rev})
	if err != nil {
		t.Fatalf("List(%q, rev=%d): %v", prefix, rev, err)
	}
	return describe(res.KVs), res
}

func describe(kvs []storage.KeyValue) []string {
	out := make([]string, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, fmt.Sprintf("%s=%s@%d/%d", kv.Key, kv.Value, kv.ModRevision, kv.CreateRevision))
	}
	return out
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// wantEvent is what the suite expects one watch event to be.
type wantEvent struct {
	typ       storage.EventType
	key       string
	value     string // "" with typ EventDelete
	prevValue string
	hasPrev   bool
	rev       int64
	createRev int64
}

// receive reads exactly len(want) events and checks them in order; a missing
// event fails after a deadline instead of hanging.
func receive(t *testing.T, ch <-chan storage.Event, want []wantEvent) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for i, w := range want {
		var ev storage.Event
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("watch channel closed after %d of %d events", i, len(want))
			}
			ev = e
		case <-deadline.C:
			t.Fatalf("timed out waiting for event %d of %d (%+v)", i+1, len(want), w)
		}
		checkEvent(t, i, ev, w)
	}
}

// receiveWithoutPrev is receive for a watch started WithoutPrevValue: an
// event may leave PrevValue nil (and then a delete's CreateRevision 0), but
// one that carries them must be right.
func receiveWithoutPrev(t *testing.T, ch <-chan storage.Event, want []wantEvent) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for i, w := range want {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("watch channel closed after %d of %d events", i, len(want))
			}
			if ev.PrevValue == nil {
				w.hasPrev, w.prevValue = false, ""
				if w.typ == storage.EventDelete && ev.CreateRevision == 0 {
					// The deleted life's CreateRevision comes with its
					// previous value, which the watch did not want.
					w.createRev = 0
				}
			}
			checkEvent(t, i, ev, w)
		case <-deadline.C:
			t.Fatalf("timed out waiting for event %d of %d (%+v)", i+1, len(want), w)
		}
	}
}

func checkEvent(t *testing.T, i int, ev storage.Event, w wantEvent) {
	t.Helper()
	if ev.Type != w.typ || ev.Key != w.key || ev.Revision != w.rev || ev.CreateRevision != w.createRev {
		t.Fatalf("event %d: got {type=%d key=%q rev=%d create=%d}, want {type=%d key=%q rev=%d create=%d}",
			i, ev.Type, ev.Key, ev.Revision, ev.CreateRevision, w.typ, w.key, w.rev, w.createRev)
	}
	if w.typ == storage.EventPut && !bytes.Equal(ev.Value, []byte(w.value)) {
		t.Fatalf("event %d (%s@%d): value %q, want %q", i, ev.Key, ev.Revision, ev.Value, w.value)
	}
	if w.typ == storage.EventDelete && ev.Value != nil {
		t.Fatalf("event %d (%s@%d): delete carries value %q", i, ev.Key, ev.Revision, ev.Value)
	}
	if w.hasPrev {
		if ev.PrevValue == nil || string(ev.PrevValue) != w.prevValue {
			t.Fatalf("event %d (%s@%d): prev value %q, want %q", i, ev.Key, ev.Revision, ev.PrevValue, w.prevValue)
		}
	} else if ev.PrevValue != nil {
		t.Fatalf("event %d (%s@%d): create carries prev value %q", i, ev.Key, ev.Revision, ev.PrevValue)
	}
}

// expectQuiet checks no further event arrives for a short while (used after
// the last expected event to catch duplicates or foreign keys).
func expectQuiet(t *testing.T, ch <-chan storage.Event) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("unexpected extra event: %+v", ev)
		}
		t.Fatalf("watch channel closed unexpectedly")
	case <-time.After(100 * time.Millisecond):
	}
}
