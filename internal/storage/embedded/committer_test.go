package embedded

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/leasehold/leasehold/internal/storage"
)

// TestStageCurrentsWritesFinalStatesInKeyOrder checks the batch tail the
// committer builds: one current state per key the batch wrote, its final
// one, in ascending key order (the order pebble's memtable inserts
// fastest), a deleted key as a delete.
func TestStageCurrentsWritesFinalStatesInKeyOrder(t *testing.T) {
	c := &committer{pending: map[string]pendingEntry{
		"/registry/leases/ns/b": {exists: true, indexEntry: indexEntry{modRev: 9, createRev: 3}},
		"/registry/leases/ns/a": {exists: true, indexEntry: indexEntry{modRev: 7, createRev: 7}},
		"/registry/leases/ns/c": {},
	}}
	b := openTest(t, Options{}).db.NewBatch()
	defer func() { _ = b.Close() }()
	if err := c.stageCurrents(b); err != nil {
		t.Fatal(err)
	}
	type op struct {
		kind  pebble.InternalKeyKind
		key   string
		state current
	}
	want := []op{
		{pebble.InternalKeyKindSet, "/registry/leases/ns/a", current{modRev: 7, createRev: 7}},
		{pebble.InternalKeyKindSet, "/registry/leases/ns/b", current{modRev: 9, createRev: 3}},
		{pebble.InternalKeyKindDelete, "/registry/leases/ns/c", current{}},
	}
	var got []op
	for r := b.Reader(); ; {
		kind, ukey, value, ok, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		o := op{kind: kind, key: string(bytes.TrimPrefix(ukey, []byte{nsValue}))}
		if kind == pebble.InternalKeyKindSet {
			if o.state, err = decodeCurrent(o.key, value); err != nil {
				t.Fatal(err)
			}
		}
		got = append(got, o)
	}
	if len(got) != len(want) {
		t.Fatalf("batch holds %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].kind != want[i].kind || got[i].key != want[i].key || got[i].state.modRev != want[i].state.modRev || got[i].state.createRev != want[i].state.createRev {
			t.Errorf("batch entry %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestBatchWritingAKeyTwiceKeepsItsLastState commits one batch that writes
// keys more than once (updates, a delete, a create after a delete) and
// checks what the store holds after a reopen: with current states staged
// once per key, each key's last write must still be the one that stands.
func TestBatchWritingAKeyTwiceKeepsItsLastState(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Create(ctx, "/k/gone", []byte("g0")); err != nil {
		t.Fatal(err)
	}
	base := s.rev.Load()
	req := func(op writeOp, key, value string, expected int64) *writeReq {
		return &writeReq{ctx: ctx, op: op, key: key, value: []byte(value), expected: expected, done: make(chan writeResult, 1)}
	}
	reqs := []*writeReq{
		req(opCreate, "/k/a", "a1", 0),
		req(opUpdate, "/k/a", "a2", base+1),
		req(opUpdate, "/k/a", "a3", base+2),
		req(opDelete, "/k/gone", "", 0),
		req(opCreate, "/k/gone", "g1", 0),
		req(opCreate, "/k/b", "b1", 0),
		req(opDelete, "/k/b", "", 0),
	}
	// The store's own committer is idle (no write is in flight): a second
	// one commits this batch exactly as given.
	newCommitter(s).commit(reqs, time.Now())
	for i, r := range reqs {
		if res := <-r.done; res.err != nil || res.rev != base+int64(i)+1 {
			t.Fatalf("write %d: revision %d, %v; want %d", i, res.rev, res.err, base+int64(i)+1)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	for _, w := range []struct {
		key, value        string
		modRev, createRev int64
	}{
		{"/k/a", "a3", base + 3, base + 1},
		{"/k/gone", "g1", base + 5, base + 5},
	} {
		kv, err := s.Get(ctx, w.key)
		if err != nil || string(kv.Value) != w.value || kv.ModRevision != w.modRev || kv.CreateRevision != w.createRev {
			t.Errorf("%s after reopen: %+v, %v; want %s at %d created %d", w.key, kv, err, w.value, w.modRev, w.createRev)
		}
	}
	if _, err := s.Get(ctx, "/k/b"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("/k/b after reopen: %v, want ErrNotFound", err)
	}
}
