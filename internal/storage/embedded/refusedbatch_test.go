package embedded

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/storage"
)

// TestRefusedBatchAnswersNoVerdictOnItsOwnWrites: when a batch is refused as
// a whole (here the disk is full), a request whose precondition was decided
// against a write staged earlier in the same batch gets the batch's error,
// not that verdict: the staged write never happened. test/robustness saw a
// Lease created by two PUTs at once on a full disk: one answered 507, the
// other 409 AlreadyExists for a Lease that never existed.
func TestRefusedBatchAnswersNoVerdictOnItsOwnWrites(t *testing.T) {
	mnt := mountTmpfs(t, 32<<20)
	s, err := Open(filepath.Join(mnt, "db"), fullDiskOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	// Leave less than the 3 MiB reserve.
	fillFile(t, filepath.Join(mnt, "ballast"), 32<<20)
	ctx := context.Background()
	waitFor(t, "the store to refuse writes", func() bool {
		_, err := s.Create(ctx, "/probe", []byte("v"))
		return errors.Is(err, storage.ErrInsufficientStorage)
	})

	// Many creates of one key at once, so that batches hold several: each
	// is refused for the disk, none is told the key exists.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var wrong []error
	deadline := time.Now().Add(2 * time.Second)
	for range 8 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				_, err := s.Create(ctx, "/same", []byte("v"))
				if !errors.Is(err, storage.ErrInsufficientStorage) {
					mu.Lock()
					wrong = append(wrong, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if len(wrong) > 0 {
		t.Fatalf("a create of a key that never existed, on a full disk, answered %v (and %d more), want ErrInsufficientStorage", wrong[0], len(wrong)-1)
	}
	if _, err := s.Get(ctx, "/same"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get /same: %v, want ErrNotFound", err)
	}
	_ = os.Remove(filepath.Join(mnt, "ballast"))
}
