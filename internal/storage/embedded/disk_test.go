package embedded

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/storage/storagetest"
)

// mountTmpfs mounts a tmpfs of size bytes on a fresh directory, unmounted
// at cleanup, or skips the test where mounting is not permitted.
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("SKIPPED: needs to mount a tmpfs (root, or CAP_SYS_ADMIN): %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fillFile writes a file of n bytes, or as much of it as fits.
func fillFile(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Write(make([]byte, n))
	if err != nil && !errors.Is(err, syscall.ENOSPC) {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil && !errors.Is(err, syscall.ENOSPC) {
		t.Fatal(err)
	}
}

// ackedWrites records the writes the store acknowledged.
type ackedWrites struct {
	mu   sync.Mutex
	revs map[string]int64
}

// writeUntilRefused runs writers creating keys with 8 KiB values until
// every writer has been refused with ErrInsufficientStorage a few times;
// any other error fails the test.
func writeUntilRefused(t *testing.T, s *Store, writers int) *ackedWrites {
	t.Helper()
	acked := &ackedWrites{revs: make(map[string]int64)}
	value := bytes.Repeat([]byte{'x'}, 8<<10)
	var wg sync.WaitGroup
	var bad atomic.Value
	deadline := time.Now().Add(15 * time.Second)
	for w := range writers {
		wg.Go(func() {
			refused := 0
			for i := 0; refused < 3 && time.Now().Before(deadline); i++ {
				key := fmt.Sprintf("/fill/%d/%d", w, i)
				rev, err := s.Create(context.Background(), key, value)
				switch {
				case err == nil:
					acked.mu.Lock()
					acked.revs[key] = rev
					acked.mu.Unlock()
				case errors.Is(err, storage.ErrInsufficientStorage):
					refused++
				default:
					bad.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := bad.Load(); err != nil {
		t.Fatalf("a write failed with %v, want ErrInsufficientStorage", err)
	}
	if time.Now().After(deadline) {
		t.Fatalf("writes were still accepted after 15s (%d acknowledged)", len(acked.revs))
	}
	return acked
}

// checkAcked fails the test unless every acknowledged write reads back.
func (a *ackedWrites) check(t *testing.T, s *Store) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	for key, rev := range a.revs {
		kv, err := s.Get(context.Background(), key)
		if err != nil || kv.ModRevision != rev {
			t.Fatalf("acknowledged %s at %d: got %+v, %v", key, rev, kv.ModRevision, err)
		}
	}
	res, err := s.List(context.Background(), "/fill/", storage.ListOptions{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(res.KVs) != len(a.revs) {
		t.Fatalf("List has %d keys, %d were acknowledged", len(res.KVs), len(a.revs))
	}
}

// fullDiskOptions keep a 3 MiB reserve on a 32 MiB tmpfs.
func fullDiskOptions() Options {
	return Options{ReservedBytes: 3 << 20, ProbeInterval: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
}

// TestDiskFullRefusesWritesAndRecovers fills a real tmpfs through the store
// under concurrent writes: the writes past the reserve are refused with
// ErrInsufficientStorage (not a crash), reads go on, Health says why, and
// freeing space lets writes resume without a restart; every acknowledged
// write is there, also after reopening.
func TestDiskFullRefusesWritesAndRecovers(t *testing.T) {
	mnt := mountTmpfs(t, 32<<20)
	ballast := filepath.Join(mnt, "ballast")
	fillFile(t, ballast, 12<<20)
	dir := filepath.Join(mnt, "db")
	s, err := Open(dir, fullDiskOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()

	acked := writeUntilRefused(t, s, 8)
	if len(acked.revs) == 0 {
		t.Fatal("no write was acknowledged before the disk filled")
	}
	if err := s.Health(); !errors.Is(err, storage.ErrInsufficientStorage) {
		t.Fatalf("Health on a full disk: %v", err)
	}
	acked.check(t, s)

	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Health to clear after space was freed", func() bool { return s.Health() == nil })
	rev, err := s.Create(context.Background(), "/fill/after", []byte("v"))
	if err != nil {
		t.Fatalf("write after space was freed: %v", err)
	}
	acked.revs["/fill/after"] = rev
	acked.check(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir, fullDiskOptions()); err != nil {
		t.Fatal(err)
	}
	acked.check(t, s)
}

// TestOpenOnFullDiskServesReads restarts a store on a disk already below
// the reserve: Open returns at once, read-only, serving reads; writes are
// refused; once space is freed the store reopens read-write by itself.
func TestOpenOnFullDiskServesReads(t *testing.T) {
	mnt := mountTmpfs(t, 32<<20)
	ballast := filepath.Join(mnt, "ballast")
	fillFile(t, ballast, 12<<20)
	dir := filepath.Join(mnt, "db")
	s, err := Open(dir, fullDiskOptions())
	if err != nil {
		t.Fatal(err)
	}
	acked := writeUntilRefused(t, s, 4)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	s, err = Open(dir, fullDiskOptions())
	if err != nil {
		t.Fatalf("Open on a full disk: %v", err)
	}
	defer func() { _ = s.Close() }()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Open on a full disk took %s", d)
	}
	if err := s.Health(); !errors.Is(err, storage.ErrInsufficientStorage) {
		t.Fatalf("Health after opening on a full disk: %v", err)
	}
	acked.check(t, s)
	if _, err := s.Create(context.Background(), "/fill/refused", []byte("v")); !errors.Is(err, storage.ErrInsufficientStorage) {
		t.Fatalf("write on a store opened read-only: %v", err)
	}

	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the store to reopen read-write", func() bool { return s.Health() == nil })
	rev, err := s.Create(context.Background(), "/fill/after", []byte("v"))
	if err != nil {
		t.Fatalf("write after space was freed: %v", err)
	}
	acked.revs["/fill/after"] = rev
	acked.check(t, s)
}

// TestWALFaultRecovers makes every write to the file system fail with EIO,
// as a failing disk does, so that a WAL write fails inside pebble (a fatal
// error to pebble): the write answers ErrUnavailable, no process dies,
// reads show only acknowledged writes, and once the disk works again the
// store reopens pebble; a watch from before the fault sees every write,
// without a gap.
func TestWALFaultRecovers(t *testing.T) {
	var failing atomic.Bool
	inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if failing.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
			return fmt.Errorf("injected: %w", syscall.EIO)
		}
		return nil
	})
	opts := fullDiskOptions()
	opts.fs = errorfs.Wrap(vfs.Default, inj)
	s := openTest(t, opts)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := storagetest.WatchEvents(ctx, t, s, "/k/", 0)
	if err != nil {
		t.Fatal(err)
	}
	revs := map[string]int64{}
	for i := range 20 {
		key := fmt.Sprintf("/k/%d", i)
		if revs[key], err = s.Create(ctx, key, []byte("before")); err != nil {
			t.Fatal(err)
		}
	}
	acked, _ := s.CurrentRevision(ctx)

	failing.Store(true)
	if _, err := s.Create(ctx, "/k/lost", []byte("during")); !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("write on a failing disk: %v, want ErrUnavailable", err)
	}
	if _, err := s.Update(ctx, "/k/0", revs["/k/0"], []byte("during")); !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("write on a faulted store: %v, want ErrUnavailable", err)
	}
	if err := s.Health(); !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("Health of a faulted store: %v", err)
	}
	// The failed batch may sit in pebble's memtable: reads must not show it.
	if _, err := s.Get(ctx, "/k/lost"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get of the write that failed: %v, want not found", err)
	}
	res, err := s.List(ctx, "/k/", storage.ListOptions{})
	if err != nil || res.Revision != acked || len(res.KVs) != 20 {
		t.Fatalf("List on a faulted store: %d keys at %d (acked %d), %v", len(res.KVs), res.Revision, acked, err)
	}

	failing.Store(false)
	waitFor(t, "the store to reopen", func() bool { return s.Health() == nil })
	rev, err := s.Update(ctx, "/k/0", revs["/k/0"], []byte("after"))
	if err != nil {
		t.Fatalf("write after the disk recovered: %v", err)
	}
	for key, want := range revs {
		if key == "/k/0" {
			want = rev
		}
		if kv, err := s.Get(ctx, key); err != nil || kv.ModRevision != want {
			t.Fatalf("%s: %d, %v; want revision %d", key, kv.ModRevision, err, want)
		}
	}
	// The watch saw every revision up to the new write, in order.
	next := int64(1)
	for next <= rev {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("watch closed at revision %d", next)
			}
			if ev.Revision != next {
				t.Fatalf("watch event at %d, want %d", ev.Revision, next)
			}
			next++
		case <-time.After(5 * time.Second):
			t.Fatalf("watch stuck before revision %d", next)
		}
	}
}

// TestFilesArePrivate opens a store in a world-writable directory under a
// zero umask: every directory ends 0700 and every file 0600, including
// files pebble creates later (memtable flushes) and a file left there
// before.
func TestFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "db")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stray"), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 64<<10)
	for i := range 600 { // ~40 MiB: the memtable flushes to sstables
		if _, err := s.Create(context.Background(), fmt.Sprintf("/k/%d", i), value); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	n := 0
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := fileMode
		if d.IsDir() {
			want = dirMode
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, info.Mode().Perm(), want)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 5 {
		t.Fatalf("only %d files checked", n)
	}
}

// TestDiskFullInsidePebbleRecovers fills a real tmpfs with the reserve
// disabled, so that pebble itself meets ENOSPC on a WAL write (fatal to
// pebble): the store survives it, refuses writes with
// ErrInsufficientStorage, serves every acknowledged write, and reopens
// pebble once space is freed.
func TestDiskFullInsidePebbleRecovers(t *testing.T) {
	mnt := mountTmpfs(t, 32<<20)
	ballast := filepath.Join(mnt, "ballast")
	fillFile(t, ballast, 12<<20)
	opts := fullDiskOptions()
	opts.ReservedBytes = -1
	s, err := Open(filepath.Join(mnt, "db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	acked := writeUntilRefused(t, s, 8)
	if err := s.Health(); !errors.Is(err, storage.ErrInsufficientStorage) {
		t.Fatalf("Health after pebble met a full disk: %v", err)
	}
	acked.check(t, s)
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the store to reopen", func() bool { return s.Health() == nil })
	acked.check(t, s)
	rev, err := s.Create(context.Background(), "/fill/after", []byte("v"))
	if err != nil {
		t.Fatalf("write after reopening: %v", err)
	}
	acked.revs["/fill/after"] = rev
	acked.check(t, s)
}
