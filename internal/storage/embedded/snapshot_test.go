package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"
)

// Pages read after later writes still show the snapshot's revision, and
// Close of the store ends an open snapshot: its next page fails, and Close
// returns once the snapshot is closed.
func TestSnapshotPagesAtOneRevisionAndEndsOnClose(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 10 {
		if _, err := s.Create(ctx, fmt.Sprintf("/registry/k/%02d", i), []byte("v1")); err != nil {
			t.Fatal(err)
		}
	}
	sn, err := s.Snapshot("/registry/")
	if err != nil {
		t.Fatal(err)
	}
	if sn.Revision() != 10 {
		t.Errorf("snapshot at %d, want 10", sn.Revision())
	}
	first, err := sn.Next(ctx, 4)
	if err != nil || len(first) != 4 {
		t.Fatalf("first page: %d keys, %v", len(first), err)
	}
	// Later writes: an update of a key still to come, a delete, a create.
	if _, err := s.Update(ctx, "/registry/k/07", 8, []byte("v2")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Delete(ctx, "/registry/k/08", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "/registry/k/99", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	rest, err := sn.Next(ctx, 100)
	if err != nil || len(rest) != 6 {
		t.Fatalf("second page: %d keys, %v; want the 6 keys as of revision 10", len(rest), err)
	}
	for _, kv := range rest {
		if string(kv.Value) != "v1" || kv.ModRevision > 10 {
			t.Errorf("%s at revision %d is %q, want its value at revision 10", kv.Key, kv.ModRevision, kv.Value)
		}
	}
	if _, err := sn.Next(ctx, 100); !errors.Is(err, io.EOF) {
		t.Errorf("after the last page: %v, want io.EOF", err)
	}

	open, err := s.Snapshot("/registry/")
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	deadline := time.After(10 * time.Second)
	for {
		_, err := open.Next(ctx, 1)
		if errors.Is(err, ErrClosed) {
			break
		}
		select {
		case <-deadline:
			t.Fatalf("snapshot pages go on after Close: %v", err)
		default:
		}
		if err == nil || errors.Is(err, io.EOF) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a snapshot was open", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := errors.Join(sn.Close(), open.Close()); err != nil {
		t.Fatal(err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}
