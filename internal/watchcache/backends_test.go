package watchcache

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/storage/embedded"
	"github.com/leasehold/leasehold/internal/storage/etcd"
	"github.com/leasehold/leasehold/internal/storage/etcd/etcdtest"
)

// backends are the stores the driver-independent tests run on: the in-memory
// double, the real embedded (pebble) driver on a temporary directory, and
// the etcd driver on a single in-process etcd member.
var backends = []struct {
	name string
	open func(t testing.TB) storage.Interface
}{
	{"mem", func(t testing.TB) storage.Interface { return newStoreT(t) }},
	{"embedded", func(t testing.TB) storage.Interface {
		s, err := embedded.Open(t.TempDir(), embedded.Options{Logger: quietLogger()})
		if err != nil {
			t.Fatalf("embedded.Open: %v", err)
		}
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("closing embedded store: %v", err)
			}
		})
		return s
	}},
	{"etcd", func(t testing.TB) storage.Interface {
		srv := etcdtest.Start(t, etcdtest.Options{})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := etcd.New(ctx, etcd.Config{Endpoints: []string{srv.Endpoint}, Logger: quietLogger()})
		if err != nil {
			t.Fatalf("etcd.New: %v", err)
		}
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("closing etcd store: %v", err)
			}
		})
		return s
	}},
}

// onEachBackend runs fn as one subtest per backend.
func onEachBackend(t *testing.T, fn func(t *testing.T, s storage.Interface)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { fn(t, b.open(t)) })
	}
}

// history reads the store's own record of the changes under prefix after rev,
// up to its current revision, through a fresh storage watch: the ground truth
// a cache watcher must reproduce.
func history(t testing.TB, s storage.Interface, prefix string, after int64) []storage.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cur, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatalf("CurrentRevision: %v", err)
	}
	ch, err := s.Watch(ctx, prefix, after)
	if err != nil {
		t.Fatalf("storage Watch: %v", err)
	}
	var out []storage.Event
	for {
		// The newest write may lie outside prefix: stop once the store is quiet.
		idle := time.NewTimer(300 * time.Millisecond)
		select {
		case evs, ok := <-ch:
			idle.Stop()
			if !ok {
				t.Fatalf("storage watch closed early")
			}
			out = append(out, evs...)
			if evs[len(evs)-1].Revision >= cur {
				return out
			}
		case <-idle.C:
			return out
		}
	}
}
