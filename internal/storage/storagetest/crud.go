package storagetest

import (
	"testing"

	"github.com/leasehold/leasehold/internal/storage"
)

func testCreate(t *testing.T, s storage.Interface) {
	ctx := testContext(t)
	p := prefixFor(t)
	before := currentRevision(ctx, t, s)
	rev := mustCreate(ctx, t, s, p+"a", "v1")
	if rev != before+1 {
		t.Fatalf("Create returned revision %d, want %d", rev, before+1)
	}
	if got := currentRevision(ctx, t, s); got != rev {
		t.Fatalf("CurrentRevision after Create = %d, want %d", got, rev)
	}
	checkKV(t, "Get after Create", mustGet(ctx, t, s, p+"a"), p+"a", "v1", rev, rev)
}

func testGet(t *testing.T, s storage.Interface) {
	ctx := testContext(t)
	p := prefixFor(t)
	_, err := s.Get(ctx, p+"missing")
	expectErr(t, "Get of a missing key", err, storage.ErrNotFound)

	created := mustCreate(ctx, t, s, p+"k", "one")
	updated := mustUpdate(ctx, t, s, p+"k", created, "two")
	checkKV(t, "Get after Update", mustGet(ctx, t, s, p+"k"), p+"k", "two", updated, created)

	// An empty value is a value, not an absence.
	emptyRev := mustCreate(ctx, t, s, p+"empty", "")
	checkKV(t, "Get of an empty value", mustGet(ctx, t, s, p+"empty"), p+"empty", "", emptyRev, emptyRev)

	// A key that is a prefix of another is still its own key.
	_, err = s.Get(ctx, p+"")
	expectErr(t, "Get of the bare prefix", err, storage.ErrNotFound)
}

func testCreateExists(t *testing.T, s storage.Interface) {
	ctx := testContext(t)
	p := prefixFor(t)
	rev := mustCreate(ctx, t, s, p+"a", "first")
	_, err := s.Create(ctx, p+"a", []byte("second"))
	expectErr(t, "second Create", err, storage.ErrKeyExists)
	if got := currentRevision(ctx, t, s); got != rev {
		t.Fatalf("a failed Create moved the revision from %d to %d", rev, got)
	}
	checkKV(t, "Get after failed Create", mustGet(ctx, t, s, p+"a"), p+"a", "first", rev, rev)

	// After a delete the key can be created again, with a new create revision.
	_, delRev := mustDelete(ctx, t, s, p+"a", 0)
	again := mustCreate(ctx, t, s, p+"a", "reborn")
	if again != delRev+1 {
		t.Fatalf("re-Create revision %d, want %d", again, delRev+1)
	}
	checkKV(t, "Get after re-Create", mustGet(ctx, t, s, p+"a"), p+"a", "reborn", again, again)
}

func testUpdate(t *testing.T, s storage.Interface) {
	ctx := testContext(t)
	p := prefixFor(t)
	created := mustCreate(ctx, t, s, p+"a", "v1")
	r2 := mustUpdate(ctx, t, s, p+"a", created, "v2")
	if r2 != created+1 {
		t.Fatalf("Update revision %d, want %d", r2, created+1)
	}
	r3 := mustUpdate(ctx, t, s, p+"a", r2, "v3")
	checkKV(t, "Get after two Updates", mustGet(ctx, t, s, p+"a"), p+"a", "v3", r3, created)
}

func testUpdateConflict(t *testing.T, s storage.Interface) {
	ctx := testContext(t)
	p := prefixFor(t)
	created := mustCreate(ctx, t, s, p+"a", "v1")
	updated := mustUpdate(ctx, t, s, p+"a", created, "v2")
	// The stale revision (created) no longer matches.
	_, err := s.Update(ctx, p+"a", created, []byte("stale"))
	expectErr(t, "Update with a stale revision", err, storage.ErrConflict)
	_, err = s.Update(ctx, p+"a", updated+100, []byte("future"))
	expectErr(t, "Update with a future revision", err, storage.ErrConflict)
	if got := currentRevision(ctx, t, s); got != updated {
		t.Fatalf("failed Updates moved the revision from %d to %d", updated, got)
	}
	checkKV(t, "Get after failed Updates", mustGet(ctx, t, s, p+"a"), p+"a", "v2", updated, created)
}

func testUpdateMissing(t *testing.T, s storage.Interface) {
	ctx := testContext(t)
	p := prefixFor(t)
	before := currentRevision(ctx, t, s)
	_, err := s.Update(ctx, p+"nope", 1, []byte("x"))
	expectErr(t, "Update of a missing key", err, storage.ErrNotFound)
	_, _, err = s.Delete(ctx, p+"nope", 0)
	expectErr(t, "Delete of a missing key", err, storage.ErrNotFound)
	if got := currentRevision(ctx, t, s); got != before {
		t.Fatalf("failed writes moved the revision from %d to %d", before, got)
	}
}

func testDelete(t *testing.T, s storage.Interface) {
	ctx := testContext(t)
	p := prefixFor(t)
	created := mustCreate(ctx, t, s, p+"a", "v1")
	updated := mustUpdate(ctx, t, s, p+"a", created, "v2")
	prev, delRev := mustDelete(ctx, t, s, p+"a", 0)
	if delRev != updated+1 {
		t.Fatalf("Delete revision %d, want %d", delRev, updated+1)
	}
	checkKV(t, "value returned by unconditional Delete", prev, p+"a", "v2", updated, created)
	_, err := s.Get(ctx, p+"a")
	expectErr(t, "Get after Delete", err, storage.ErrNotFound)
	_, _, err = s.Delete(ctx, p+"a", 0)
	expectErr(t, "second Delete", err, storage.ErrNotFound)
}

func testDeleteConditional(t *testing.T, s storage.Interface) {
	ctx := testContext(t)
	p := prefixFor(t)
	created := mustCreate(ctx, t, s, p+"a", "v1")
	updated := mustUpdate(ctx, t, s, p+"a", created, "v2")
	_, _, err := s.Delete(ctx, p+"a", created)
	expectErr(t, "Delete with a stale revision", err, storage.ErrConflict)
	if got := currentRevision(ctx, t, s); got != updated {
		t.Fatalf("a failed Delete moved the revision from %d to %d", updated, got)
	}
	checkKV(t, "Get after failed Delete", mustGet(ctx, t, s, p+"a"), p+"a", "v2", updated, created)
	prev, delRev := mustDelete(ctx, t, s, p+"a", updated)
	checkKV(t, "value returned by conditional Delete", prev, p+"a", "v2", updated, created)
	if got := currentRevision(ctx, t, s); got != delRev || delRev != updated+1 {
		t.Fatalf("Delete revision %d, CurrentRevision %d, want both %d", delRev, got, updated+1)
	}
}

func testRevisionIncrements(t *testing.T, s storage.Interface) {
	ctx := testContext(t)
	p := prefixFor(t)
	last := currentRevision(ctx, t, s)
	step := func(what string, rev int64) {
		t.Helper()
		if rev != last+1 {
			t.Fatalf("%s returned revision %d, want %d", what, rev, last+1)
		}
		if cur := currentRevision(ctx, t, s); cur != rev {
			t.Fatalf("after %s CurrentRevision = %d, want %d", what, cur, rev)
		}
		last = rev
	}
	for i := range 5 {
		key := p + string(rune('a'+i))
		c := mustCreate(ctx, t, s, key, "c")
		step("Create", c)
		step("Update", mustUpdate(ctx, t, s, key, c, "u"))
	}
	for i := range 5 {
		_, rev := mustDelete(ctx, t, s, p+string(rune('a'+i)), 0)
		step("Delete", rev)
	}
}
