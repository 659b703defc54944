package embedded

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/leasehold/leasehold/internal/storage"
)

// A write stores its value once, in its log record: the WAL grows by about
// one value per write (two before the current state stopped copying it), the
// current state holds only its two revisions, and reads, lists and a reopen
// still see the newest value.
func TestValuesAreStoredOnce(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	s := mustOpen(t, dir)
	value := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, 4096) }
	before := s.db.Metrics().WAL.BytesIn
	const writes = 50
	rev, err := s.Create(ctx, "/k/a", value(0))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < writes; i++ {
		if rev, err = s.Update(ctx, "/k/a", rev, value(i)); err != nil {
			t.Fatal(err)
		}
	}
	walPerWrite := float64(s.db.Metrics().WAL.BytesIn-before) / writes
	if walPerWrite > 1.25*4096 {
		t.Errorf("WAL grew by %.0f bytes per write of a 4096-byte value, want about one copy", walPerWrite)
	}
	raw, closer, err := s.db.Get(valueKey("/k/a"))
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 16 {
		t.Errorf("current state is %d bytes, want 16 (two revisions, no value)", len(raw))
	}
	if err := closer.Close(); err != nil {
		t.Fatal(err)
	}
	last := value(writes - 1)
	check := func(s *Store, when string) {
		t.Helper()
		kv, err := s.Get(ctx, "/k/a")
		if err != nil || kv.ModRevision != rev || !bytes.Equal(kv.Value, last) {
			t.Fatalf("%s: Get = revision %d, %d bytes, %v; want revision %d and the last value", when, kv.ModRevision, len(kv.Value), err, rev)
		}
		res, err := s.List(ctx, "/k/", storage.ListOptions{})
		if err != nil || len(res.KVs) != 1 || !bytes.Equal(res.KVs[0].Value, last) {
			t.Fatalf("%s: List = %d keys, %v; want /k/a with the last value", when, len(res.KVs), err)
		}
	}
	check(s, "before reopening")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	check(openAt(t, dir), "after reopening")
}

// A current state written before values moved to the log carries a copy of
// its value; it is read from that copy, and the key's next write replaces it
// with a state that points at the log.
func TestOldCurrentStatesStillRead(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	s := mustOpen(t, dir)
	rev, err := s.Create(ctx, "/k/a", []byte("a1"))
	if err != nil {
		t.Fatal(err)
	}
	// Rewrite the state in the old format with a copy that differs from the
	// record, so that reads show which one they used.
	if err := s.db.Set(valueKey("/k/a"), append(encodeCurrent(rev, rev), "copy"...), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, dir)
	if kv, err := s.Get(ctx, "/k/a"); err != nil || string(kv.Value) != "copy" || kv.ModRevision != rev {
		t.Fatalf("Get of an old state = %q at %d, %v; want its copy at %d", kv.Value, kv.ModRevision, err, rev)
	}
	if res, err := s.List(ctx, "/k/", storage.ListOptions{}); err != nil || len(res.KVs) != 1 || string(res.KVs[0].Value) != "copy" {
		t.Fatalf("List of an old state = %+v, %v; want its copy", res.KVs, err)
	}
	rev2, err := s.Update(ctx, "/k/a", rev, []byte("a2"))
	if err != nil {
		t.Fatal(err)
	}
	if kv, err := s.Get(ctx, "/k/a"); err != nil || string(kv.Value) != "a2" || kv.ModRevision != rev2 {
		t.Fatalf("Get after the next write = %q at %d, %v; want a2 at %d", kv.Value, kv.ModRevision, err, rev2)
	}
}

// Pebble writes the store's tables one namespace each, and the log's
// either at or below the compacted revision, where sweeps delete, or above
// it, where new records go (see tableSpans).
func TestTablesKeepToOneSpan(t *testing.T) {
	ctx := testCtx(t)
	s := openTest(t, Options{})
	const keys = 40
	revs := make([]int64, keys)
	write := func() {
		for k := range keys {
			key := fmt.Sprintf("/k/%02d", k)
			var err error
			if revs[k] == 0 {
				revs[k], err = s.Create(ctx, key, []byte("v"))
			} else {
				revs[k], err = s.Update(ctx, key, revs[k], []byte("v"))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 32 {
		write()
	}
	head, _ := s.CurrentRevision(ctx)
	compacted := head - keys/2
	if err := s.Compact(ctx, compacted); err != nil {
		t.Fatal(err)
	}
	write()
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	levels, err := s.db.SSTables()
	if err != nil {
		t.Fatal(err)
	}
	var logTables int
	for _, tables := range levels {
		for _, table := range tables {
			lo, hi := table.Smallest.UserKey, table.Largest.UserKey
			if lo[0] != hi[0] {
				t.Errorf("table %s spans namespaces: %q to %q", table.FileNum, lo, hi)
				continue
			}
			if lo[0] != nsLog {
				continue
			}
			logTables++
			// A range deletion's end is exclusive: the table may end at the
			// first revision above compacted.
			first, _ := decodeLogKey(lo)
			last, _ := decodeLogKey(hi)
			if first <= compacted && last > compacted+1 {
				t.Errorf("log table %s holds revisions %d to %d, across the compacted revision %d", table.FileNum, first, last, compacted)
			}
		}
	}
	if logTables < 2 {
		t.Errorf("%d log tables, want one of deletions and one of new records at least", logTables)
	}
}
