package embedded

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/storage/storagetest"
)

// logRevisions lists the revisions of the log records in (from, to].
func logRevisions(t testing.TB, s *Store, from, to int64) []int64 {
	t.Helper()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: logKey(from + 1), UpperBound: logKey(to + 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = it.Close() }()
	var revs []int64
	for ok := it.First(); ok; ok = it.Next() {
		rev, err := decodeLogKey(it.Key())
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, rev)
	}
	return revs
}

// liveModRevisions returns the current ModRevision of every key under
// prefix, sorted.
func liveModRevisions(t *testing.T, s *Store, prefix string) []int64 {
	t.Helper()
	res, err := s.List(testCtx(t), prefix, storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var revs []int64
	for _, kv := range res.KVs {
		revs = append(revs, kv.ModRevision)
	}
	slices.Sort(revs)
	return revs
}

// After a compaction the log keeps, at or below the compacted revision,
// exactly the newest record of every live key: superseded records and
// deletes are gone, so history does not grow with the number of writes.
func TestCompactionKeepsOneRecordPerLiveKey(t *testing.T) {
	ctx := testCtx(t)
	s := openTest(t, Options{})
	for round := range 3 {
		for i := range 10 {
			key := fmt.Sprintf("/k/%d", i)
			kv, err := s.Get(ctx, key)
			if err != nil {
				if _, err := s.Create(ctx, key, []byte("v0")); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if i%4 == 3 && round == 1 {
				if _, _, err := s.Delete(ctx, key, kv.ModRevision); err != nil {
					t.Fatal(err)
				}
				continue
			}
			for j := range 5 {
				rev, err := s.Update(ctx, key, kv.ModRevision, fmt.Appendf(nil, "v%d.%d", round, j))
				if err != nil {
					t.Fatal(err)
				}
				kv.ModRevision = rev
			}
		}
		head, _ := s.CurrentRevision(ctx)
		if err := s.Compact(ctx, head); err != nil {
			t.Fatal(err)
		}
		got, want := logRevisions(t, s, 0, head), liveModRevisions(t, s, "/k/")
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: log records at or below %d are %v, want the live keys' revisions %v", round, head, got, want)
		}
	}
}

// A write after the compacted revision replaced a value written before it:
// reading at the compacted revision and replaying the write as a watch
// event both need that value, so compaction must keep it.
func TestCompactionKeepsWhatALaterWriteReplaced(t *testing.T) {
	ctx := testCtx(t)
	s := openTest(t, Options{})
	a, _ := s.Create(ctx, "/k/a", []byte("a1"))
	b, _ := s.Create(ctx, "/k/b", []byte("b1"))
	b2, _ := s.Update(ctx, "/k/b", b, []byte("b2"))
	if err := s.Compact(ctx, b2); err != nil {
		t.Fatal(err)
	}
	a2, err := s.Update(ctx, "/k/a", a, []byte("a2"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Delete(ctx, "/k/b", b2); err != nil {
		t.Fatal(err)
	}
	res, err := s.List(ctx, "/k/", storage.ListOptions{Revision: b2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.KVs) != 2 || string(res.KVs[0].Value) != "a1" || res.KVs[0].ModRevision != a ||
		string(res.KVs[1].Value) != "b2" || res.KVs[1].ModRevision != b2 {
		t.Fatalf("list at the compacted revision %d: %+v, want /k/a=a1@%d and /k/b=b2@%d", b2, res.KVs, a, b2)
	}
	ch, err := storagetest.WatchEvents(ctx, t, s, "/k/", b2)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		rev  int64
		prev string
	}{{a2, "a1"}, {a2 + 1, "b2"}} {
		ev := <-ch
		if ev.Revision != want.rev || string(ev.PrevValue) != want.prev {
			t.Fatalf("replayed event %+v, want revision %d with previous value %q", ev, want.rev, want.prev)
		}
	}
}

// A compaction interrupted after recording its revision but before sweeping
// leaves the records it would have deleted; reads at the compacted revision
// still work after a restart, and the next compaction sweeps them too.
func TestInterruptedSweepIsFinishedByTheNextCompaction(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	s := mustOpen(t, dir)
	rev, err := s.Create(ctx, "/k/a", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if rev, err = s.Update(ctx, "/k/a", rev, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	// What Compact does before its sweep.
	if err := s.db.Set(metaCompacted, encodeInt64(rev), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, dir)
	if got := logRevisions(t, s, 0, rev); len(got) != 6 {
		t.Fatalf("log before the sweep: %v, want 6 records", got)
	}
	last, err := s.Update(ctx, "/k/a", rev, []byte("last"))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := s.List(ctx, "/k/", storage.ListOptions{Revision: rev}); err != nil || len(res.KVs) != 1 || res.KVs[0].ModRevision != rev {
		t.Fatalf("list at the compacted revision %d: %+v, %v", rev, res.KVs, err)
	}
	if err := s.Compact(ctx, last); err != nil {
		t.Fatal(err)
	}
	if got := logRevisions(t, s, 0, last); !slices.Equal(got, []int64{last}) {
		t.Fatalf("log after the next compaction: %v, want only %d", got, last)
	}
}

// Stores written before compaction kept the records later writes replace
// had their whole log deleted up to the compacted revision, and their
// records carried the previous value. Open restores the records of keys
// unchanged since, so reading at the compacted revision keeps working.
func TestOpenRestoresRecordsAnOldCompactionDeleted(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	s := mustOpen(t, dir)
	a, _ := s.Create(ctx, "/k/a", []byte("a1"))
	b, _ := s.Create(ctx, "/k/b", []byte("b1"))
	b2, _ := s.Update(ctx, "/k/b", b, []byte("b2"))
	// An old-format record after the compacted revision: with its previous
	// value, whose own record is gone.
	old := logRecord{typ: storage.EventPut, key: "/k/b", value: []byte("b3"), createRev: b, prevModRev: b2}
	enc := old.encode()
	enc = append(enc, 2, 'b', '2')
	oldBatch := s.db.NewBatch()
	for _, err := range []error{
		oldBatch.DeleteRange(logKey(0), logKey(b2+1), nil),
		oldBatch.Set(logKey(b2+1), enc, nil),
		// Both current states in the format that kept a copy of the value.
		oldBatch.Set(valueKey("/k/a"), append(encodeCurrent(a, a), "a1"...), nil),
		oldBatch.Set(valueKey("/k/b"), append(encodeCurrent(b2+1, b), "b3"...), nil),
		oldBatch.Set(metaRevision, encodeInt64(b2+1), nil),
		oldBatch.Set(metaCompacted, encodeInt64(b2), nil),
		oldBatch.Commit(pebble.Sync),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, dir)
	if _, err := s.Update(ctx, "/k/a", a, []byte("a2")); err != nil {
		t.Fatal(err)
	}
	res, err := s.List(ctx, "/k/", storage.ListOptions{Revision: b2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.KVs) != 2 || string(res.KVs[0].Value) != "a1" || string(res.KVs[1].Value) != "b2" {
		t.Fatalf("list at the compacted revision %d: %+v, want /k/a=a1 and /k/b=b2", b2, res.KVs)
	}
	ch, err := storagetest.WatchEvents(ctx, t, s, "/k/b", b2)
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-ch; ev.Revision != b2+1 || string(ev.PrevValue) != "b2" {
		t.Fatalf("replayed old-format event %+v, want revision %d with previous value b2", ev, b2+1)
	}
}

func TestRevisionRuns(t *testing.T) {
	for _, tc := range []struct {
		revs []int64
		want [][2]int64
	}{
		{nil, nil},
		{[]int64{7}, [][2]int64{{7, 7}}},
		{[]int64{5, 3, 4, 9, 1}, [][2]int64{{1, 1}, {3, 5}, {9, 9}}},
		{[]int64{2, 2, 3, 3, 6}, [][2]int64{{2, 3}, {6, 6}}},
		{[]int64{10, 11, 12, 14, 15, 13}, [][2]int64{{10, 15}}},
	} {
		var got [][2]int64
		for first, last := range revisionRuns(slices.Clone(tc.revs)) {
			got = append(got, [2]int64{first, last})
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("runs of %v: %v, want %v", tc.revs, got, tc.want)
		}
	}
}

// Renewals make long runs of records to delete, which a sweep deletes as
// range deletions: the runs must end exactly at the records it keeps (a
// key written once in between, the newest renewal of each key), and a
// delete's own record goes with the run it falls in.
func TestCompactionDeletesRunsOfRenewals(t *testing.T) {
	ctx := testCtx(t)
	s := openTest(t, Options{})
	const keys, rounds = 4, 3 * minRangeRun
	revs := make([]int64, keys)
	for round := range rounds {
		for k := range keys {
			key := fmt.Sprintf("/k/%d", k)
			var err error
			if round == 0 {
				revs[k], err = s.Create(ctx, key, []byte("v0"))
			} else {
				revs[k], err = s.Update(ctx, key, revs[k], fmt.Appendf(nil, "v%d", round))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		switch round {
		case minRangeRun:
			// Written once: its record stays in the middle of a run.
			if _, err := s.Create(ctx, "/k/once", []byte("once")); err != nil {
				t.Fatal(err)
			}
		case 2 * minRangeRun:
			// Created and deleted: both records go.
			rev, err := s.Create(ctx, "/k/gone", []byte("gone"))
			if err == nil {
				_, _, err = s.Delete(ctx, "/k/gone", rev)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	head, _ := s.CurrentRevision(ctx)
	before, err := s.List(ctx, "/k/", storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(ctx, head); err != nil {
		t.Fatal(err)
	}
	got, want := logRevisions(t, s, 0, head), liveModRevisions(t, s, "/k/")
	if !slices.Equal(got, want) {
		t.Fatalf("log records at or below %d are %v, want the live keys' revisions %v", head, got, want)
	}
	after, err := s.List(ctx, "/k/", storage.ListOptions{Revision: head})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(before.KVs, after.KVs, func(a, b storage.KeyValue) bool {
		return a.Key == b.Key && string(a.Value) == string(b.Value) && a.ModRevision == b.ModRevision
	}) {
		t.Fatalf("list at the compacted revision %d: %+v, want %+v", head, after.KVs, before.KVs)
	}
}
