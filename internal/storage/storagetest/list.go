package storagetest

import (
	"fmt"
	"testing"

	"github.com/leasehold/leasehold/internal/storage"
)

func testListPrefix(t *testing.T, s storage.Interface) {
	ctx := testContext(t)
	p := prefixFor(t)
	ra := mustCreate(ctx, t, s, p+"a/1", "x")
	rb := mustCreate(ctx, t, s, p+"a/2", "y")
	// Neighbours that share the string prefix "a" but not the directory "a/".
	mustCreate(ctx, t, s, p+"ab/1", "no")
	mustCreate(ctx, t, s, p+"a", "no")
	last := mustCreate(ctx, t, s, p+"b/1", "no")

	got, res := listAll(ctx, t, s, p+"a/", 0)
	want := []string{
		fmt.Sprintf("%sa/1=x@%d/%d", p, ra, ra),
		fmt.Sprintf("%sa/2=y@%d/%d", p, rb, rb),
	}
	if !equalStrings(got, want) {
		t.Fatalf("List(%q) = %v, want %v", p+"a/", got, want)
	}
	if res.More {
		t.Fatalf("List without Limit reported More")
	}
	if res.Revision != last {
		t.Fatalf("List revision %d, want the current %d", res.Revision, last)
	}

	got, _ = listAll(ctx, t, s, p, 0)
	if len(got) != 5 {
		t.Fatalf("List(%q) returned %d keys, want 5: %v", p, len(got), got)
	}
	got, _ = listAll(ctx, t, s, p+"zzz/", 0)
	if len(got) != 0 {
		t.Fatalf("List of an empty prefix returned %v", got)
	}
}

func testListPaging(t *testing.T, s storage.Interface) {
	ctx := testContext(t)
	p := prefixFor(t)
	const n = 7
	var keys []string
	for i := range n {
		key := fmt.Sprintf("%sitem-%02d", p, i)
		keys = append(keys, key)
		mustCreate(ctx, t, s, key, "v")
	}
	mustCreate(ctx, t, s, p+"itemz-outside/no", "v") // under p but kept out with the narrower prefix below
	prefix := p + "item-"

	var seen []string
	start := ""
	pages := 0
	var pageRev int64
	for {
		res, err := s.List(ctx, prefix, storage.ListOptions{StartKey: start, Limit: 3, Revision: pageRev})
		if err != nil {
			t.Fatalf("List page %d: %v", pages, err)
		}
		pages++
		if len(res.KVs) > 3 {
			t.Fatalf("page %d has %d keys, Limit was 3", pages, len(res.KVs))
		}
		if pageRev == 0 {
			pageRev = res.Revision
		} else if res.Revision != pageRev {
			t.Fatalf("page %d read at revision %d, asked for %d", pages, res.Revision, pageRev)
		}
		for _, kv := range res.KVs {
			seen = append(seen, kv.Key)
		}
		if !res.More {
			break
		}
		if len(res.KVs) == 0 {
			t.Fatalf("page %d is empty but More is set", pages)
		}
		start = res.KVs[len(res.KVs)-1].Key + "\x00"
		if pages > n {
			t.Fatalf("paging does not terminate")
		}
	}
	if !equalStrings(seen, keys) {
		t.Fatalf("paged keys %v, want %v", seen, keys)
	}
	if pages != 3 {
		t.Fatalf("%d keys with Limit 3 took %d pages, want 3", n, pages)
	}

	// A page that ends exactly at the last key reports no More.
	res, err := s.List(ctx, prefix, storage.ListOptions{StartKey: keys[4], Limit: 3})
	if err != nil {
		t.Fatalf("List of the last page: %v", err)
	}
	if len(res.KVs) != 3 || res.More {
		t.Fatalf("last exact page: %d keys, More=%v; want 3 keys, More=false", len(res.KVs), res.More)
	}
}

func testListAtRevision(t *testing.T, s storage.Interface) {
	ctx := testContext(t)
	p := prefixFor(t)
	ra := mustCreate(ctx, t, s, p+"a", "a1")
	rb := mustCreate(ctx, t, s, p+"b", "b1")
	rc := mustCreate(ctx, t, s, p+"c", "c1")
	snapshot := rc
	wantAtSnapshot := []string{
		fmt.Sprintf("%sa=a1@%d/%d", p, ra, ra),
		fmt.Sprintf("%sb=b1@%d/%d", p, rb, rb),
		fmt.Sprintf("%sc=c1@%d/%d", p, rc, rc),
	}

	// Changes after the snapshot: update a twice, delete b, create d,
	// delete and re-create c.
	ra2 := mustUpdate(ctx, t, s, p+"a", ra, "a2")
	ra3 := mustUpdate(ctx, t, s, p+"a", ra2, "a3")
	mustDelete(ctx, t, s, p+"b", 0)
	rd := mustCreate(ctx, t, s, p+"d", "d1")
	mustDelete(ctx, t, s, p+"c", rc)
	rc2 := mustCreate(ctx, t, s, p+"c", "c2")

	got, res := listAll(ctx, t, s, p, snapshot)
	if !equalStrings(got, wantAtSnapshot) {
		t.Fatalf("List at revision %d = %v, want %v", snapshot, got, wantAtSnapshot)
	}
	if res.Revision != snapshot {
		t.Fatalf("List at revision %d reported revision %d", snapshot, res.Revision)
	}

	// In between: a updated once, b still there.
	got, _ = listAll(ctx, t, s, p, ra2)
	want := []string{
		fmt.Sprintf("%sa=a2@%d/%d", p, ra2, ra),
		fmt.Sprintf("%sb=b1@%d/%d", p, rb, rb),
		fmt.Sprintf("%sc=c1@%d/%d", p, rc, rc),
	}
	if !equalStrings(got, want) {
		t.Fatalf("List at revision %d = %v, want %v", ra2, got, want)
	}

	// Paging at an old revision sees the old key set.
	res, err := s.List(ctx, p, storage.ListOptions{Revision: snapshot, StartKey: p + "b", Limit: 1})
	if err != nil {
		t.Fatalf("paged List at revision %d: %v", snapshot, err)
	}
	if got := describe(res.KVs); !equalStrings(got, wantAtSnapshot[1:2]) || !res.More {
		t.Fatalf("paged List at revision %d = %v More=%v, want %v More=true", snapshot, got, res.More, wantAtSnapshot[1:2])
	}

	// The newest state, asked for explicitly and implicitly.
	wantNow := []string{
		fmt.Sprintf("%sa=a3@%d/%d", p, ra3, ra),
		fmt.Sprintf("%sc=c2@%d/%d", p, rc2, rc2),
		fmt.Sprintf("%sd=d1@%d/%d", p, rd, rd),
	}
	for _, rev := range []int64{0, rc2} {
		got, _ = listAll(ctx, t, s, p, rev)
		if !equalStrings(got, wantNow) {
			t.Fatalf("List at revision %d = %v, want %v", rev, got, wantNow)
		}
	}
}

func testListFutureRevision(t *testing.T, s storage.Interface) {
	ctx := testContext(t)
	p := prefixFor(t)
	rev := mustCreate(ctx, t, s, p+"a", "v")
	_, err := s.List(ctx, p, storage.ListOptions{Revision: rev + 10})
	expectErr(t, "List at a future revision", err, storage.ErrFutureRevision)
}
