package embedded

import (
	"bytes"
	"fmt"
	"testing"
)

// Usage counts one state per live key, one record per write until
// compaction, and after compacting everything one record per live key.
func TestUsageCountsStatesAndHistory(t *testing.T) {
	ctx := testCtx(t)
	s := openTest(t, Options{})
	const keys, updates, size = 20, 4, 1000
	value := bytes.Repeat([]byte("x"), size)
	for i := range keys {
		key := fmt.Sprintf("/k/%d", i)
		rev, err := s.Create(ctx, key, value)
		if err != nil {
			t.Fatal(err)
		}
		for range updates {
			if rev, err = s.Update(ctx, key, rev, value); err != nil {
				t.Fatal(err)
			}
		}
	}
	u, err := s.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if u.States != keys || u.Records != keys*(1+updates) {
		t.Fatalf("before compaction: %d states, %d records; want %d, %d", u.States, u.Records, keys, keys*(1+updates))
	}
	if u.RecordBytes < u.Records*size || u.DiskBytes == 0 {
		t.Fatalf("before compaction: %d record bytes for %d records of %d-byte values, %d on disk", u.RecordBytes, u.Records, size, u.DiskBytes)
	}
	head, _ := s.CurrentRevision(ctx)
	if err := s.Compact(ctx, head); err != nil {
		t.Fatal(err)
	}
	after, err := s.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if after.States != keys || after.Records != keys {
		t.Fatalf("after compaction: %d states, %d records; want %d of each", after.States, after.Records, keys)
	}
	if after.LogicalBytes() >= u.LogicalBytes() {
		t.Errorf("compaction did not shrink the logical size: %d -> %d", u.LogicalBytes(), after.LogicalBytes())
	}
}
