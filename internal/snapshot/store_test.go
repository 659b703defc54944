package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/storage/embedded"
	"github.com/leasehold/leasehold/internal/storage/etcd"
	"github.com/leasehold/leasehold/internal/storage/etcd/etcdtest"
	"github.com/leasehold/leasehold/internal/storage/storagetest"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func openEmbedded(t *testing.T, dir string) *embedded.Store {
	t.Helper()
	s, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// writeLoad creates keys and keeps updating them until stop is closed.
func writeLoad(ctx context.Context, t *testing.T, s storage.Interface, writers int, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("/registry/leases/ns/w%d-%03d", w, i%100)
				if i < 100 {
					if _, err := s.Create(ctx, key, []byte(fmt.Sprint(i))); err != nil {
						t.Errorf("create %s: %v", key, err)
						return
					}
					continue
				}
				if _, err := storage.GuaranteedUpdate(ctx, s, key, func(storage.KeyValue) ([]byte, error) {
					return []byte(fmt.Sprint(i)), nil
				}); err != nil {
					t.Errorf("update %s: %v", key, err)
					return
				}
			}
		}()
	}
	return &wg
}

// saveUnderLoad saves s while writers write, and checks the snapshot holds
// exactly the store's state at its revision.
func saveUnderLoad(t *testing.T, s storage.Interface) []byte {
	ctx := testContext(t)
	stop := make(chan struct{})
	wg := writeLoad(ctx, t, s, 4, stop)
	defer wg.Wait()
	defer close(stop)
	for {
		if rev, _ := s.CurrentRevision(ctx); rev > 1000 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	var buf bytes.Buffer
	h, n, err := Save(ctx, s, &buf)
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.List(ctx, Prefix, storage.ListOptions{Revision: h.Revision})
	if err != nil {
		t.Fatal(err)
	}
	_, got, err := readAll(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if int(n) != len(want.KVs) || !sameKVs(got, want.KVs) {
		t.Fatalf("snapshot at %d has %d keys, the store had %d at that revision (or they differ)", h.Revision, n, len(want.KVs))
	}
	return buf.Bytes()
}

func sameKVs(a, b []storage.KeyValue) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || !bytes.Equal(a[i].Value, b[i].Value) ||
			a[i].ModRevision != b[i].ModRevision || a[i].CreateRevision != b[i].CreateRevision {
			return false
		}
	}
	return true
}

// checkRestored opens the restored store and checks it holds the snapshot's
// keys with their revisions, continues from rev, and refuses older revisions.
func checkRestored(t *testing.T, dir string, snap []byte, rev int64) {
	ctx := testContext(t)
	h, kvs, err := readAll(snap)
	if err != nil {
		t.Fatal(err)
	}
	s := openEmbedded(t, dir)
	if cur, _ := s.CurrentRevision(ctx); cur != rev {
		t.Errorf("restored store at revision %d, want %d", cur, rev)
	}
	got, err := s.List(ctx, Prefix, storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !sameKVs(got.KVs, kvs) {
		t.Fatalf("restored store lists %d keys, snapshot has %d (or they differ)", len(got.KVs), len(kvs))
	}
	if _, err := s.List(ctx, Prefix, storage.ListOptions{Revision: h.Revision - 1}); !errors.Is(err, storage.ErrCompacted) {
		t.Errorf("list before the snapshot: %v, want ErrCompacted", err)
	}
	if _, err := s.Watch(ctx, Prefix, h.Revision-1); !errors.Is(err, storage.ErrCompacted) {
		t.Errorf("watch from before the snapshot: %v, want ErrCompacted", err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := storagetest.WatchEvents(wctx, t, s, Prefix, rev)
	if err != nil {
		t.Fatal(err)
	}
	// A writer holding a key's old revision updates it, and the next
	// revision follows the restored one.
	kv := kvs[len(kvs)/2]
	next, err := s.Update(ctx, kv.Key, kv.ModRevision, []byte("after"))
	if err != nil || next != rev+1 {
		t.Fatalf("update at the key's snapshot revision: revision %d, %v; want %d", next, err, rev+1)
	}
	select {
	case ev := <-events:
		if ev.Revision != next || ev.Key != kv.Key || !bytes.Equal(ev.PrevValue, kv.Value) {
			t.Errorf("watch event %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event for the write after the restore")
	}
}

func TestEmbeddedOnlineSaveAndRestore(t *testing.T) {
	s := openEmbedded(t, t.TempDir())
	snap := saveUnderLoad(t, s)
	h, _, _ := readAll(snap)
	for _, bump := range []int64{0, 1000} {
		t.Run(fmt.Sprintf("bump=%d", bump), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "db")
			if _, _, err := RestoreEmbedded(bytes.NewReader(snap), dir, RestoreOptions{BumpRevision: bump}); err != nil {
				t.Fatal(err)
			}
			checkRestored(t, dir, snap, h.Revision+bump)
			if _, _, err := RestoreEmbedded(bytes.NewReader(snap), dir, RestoreOptions{}); err == nil {
				t.Error("restored over a store")
			}
		})
	}
}

func TestEtcdSaveRestoresIntoEmbedded(t *testing.T) {
	srv := etcdtest.Start(t, etcdtest.Options{})
	s, err := etcd.New(testContext(t), etcd.Config{Endpoints: []string{srv.Endpoint}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	snap := saveUnderLoad(t, s)
	h, _, _ := readAll(snap)
	if h.Source != "etcd" {
		t.Errorf("source %q", h.Source)
	}
	dir := filepath.Join(t.TempDir(), "db")
	if _, _, err := RestoreEmbedded(bytes.NewReader(snap), dir, RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	checkRestored(t, dir, snap, h.Revision)
}

// A damaged file restores nothing: the directory is not created.
func TestRestoreOfDamagedFileLeavesNothing(t *testing.T) {
	b := writeSnapshot(t, 100, testKVs(20))
	dir := filepath.Join(t.TempDir(), "db")
	if _, _, err := RestoreEmbedded(bytes.NewReader(b[:len(b)-1]), dir, RestoreOptions{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("restore of a truncated file: %v, want ErrCorrupt", err)
	}
	entries, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), "*"))
	hidden, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), ".*"))
	if len(entries)+len(hidden) != 0 {
		t.Errorf("left behind %v %v", entries, hidden)
	}
}
