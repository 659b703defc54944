package etcd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/storage/etcd/etcdtest"
	"github.com/leasehold/leasehold/internal/storage/storagetest"
	"github.com/leasehold/leasehold/internal/testdeps"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// nextEvent returns the watch's next event, failing after 5 s.
func nextEvent(t *testing.T, ch <-chan storage.Event) storage.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
	}
	return storage.Event{}
}

// TestWatchProgressNotify: a watch opened WithProgressNotify reports, on
// RequestProgress, the revision it has delivered everything up to, also
// when that revision was made outside its prefix (by another installation
// on the cluster), after the events it has to deliver and never before;
// a watch that did not ask gets no progress events.
func TestWatchProgressNotify(t *testing.T) {
	ctx := testContext(t)
	endpoint := etcdtest.Start(t, etcdtest.Options{}).Endpoint
	s := newTestStore(t, endpoint, "")
	other := newTestStore(t, endpoint, "/other/registry")

	start, err := s.Create(ctx, "/registry/leases/ns/a", []byte("a1"))
	if err != nil {
		t.Fatal(err)
	}
	progress, err := storagetest.WatchEvents(ctx, t, s, "/registry/leases/", start, storage.WithoutPrevValue, storage.WithProgressNotify)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := storagetest.WatchEvents(ctx, t, s, "/registry/leases/", start)
	if err != nil {
		t.Fatal(err)
	}

	// A write elsewhere moves the revision with no event under the prefix.
	elsewhere, err := other.Create(ctx, "/registry/leases/ns/a", []byte("other"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RequestProgress(ctx); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, progress); ev.Type != storage.EventProgress || ev.Revision < elsewhere || ev.Key != "" || ev.Value != nil {
		t.Fatalf("after a write elsewhere at %d: %+v, want progress at >= %d", elsewhere, ev, elsewhere)
	}

	// A write under the prefix comes first, then a progress at least as new.
	a2, err := s.Update(ctx, "/registry/leases/ns/a", start, []byte("a2"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RequestProgress(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		ev := nextEvent(t, progress)
		if ev.Type == storage.EventProgress && ev.Revision < a2 {
			// An answer to the first request may still be on its way;
			// it must not claim a2.
			continue
		}
		if ev.Type != storage.EventPut || ev.Revision != a2 || string(ev.Value) != "a2" || ev.PrevValue != nil {
			t.Fatalf("got %+v, want the put at %d (without its previous value) before any progress past it", ev, a2)
		}
		break
	}
	if ev := nextEvent(t, progress); ev.Type != storage.EventProgress || ev.Revision < a2 {
		t.Fatalf("got %+v, want progress at >= %d", ev, a2)
	}

	// The watch that did not ask saw the put only (with its previous value).
	if ev := nextEvent(t, plain); ev.Type != storage.EventPut || ev.Revision != a2 || string(ev.PrevValue) != "a1" {
		t.Fatalf("plain watch: %+v, want the put at %d with previous value a1", ev, a2)
	}
	select {
	case ev := <-plain:
		t.Fatalf("plain watch got %+v, want nothing more", ev)
	case <-time.After(300 * time.Millisecond):
	}
}

// TestCacheConsistentAcrossForeignWrites: a watch cache on etcd reaches the
// store's current revision although the newest writes are another
// installation's (no event for it): a consistent read waits for that
// revision and gets it from progress within a few hundred milliseconds,
// not after the next write of its own.
func TestCacheConsistentAcrossForeignWrites(t *testing.T) {
	ctx := testContext(t)
	endpoint := etcdtest.Start(t, etcdtest.Options{}).Endpoint
	s := newTestStore(t, endpoint, "")
	other := newTestStore(t, endpoint, "/other/registry")
	if _, err := s.Create(ctx, "/registry/leases/ns/a", []byte("a1")); err != nil {
		t.Fatal(err)
	}
	cache := watchcache.New(s, watchcache.Options{Prefix: "/registry/", Decode: decodeAny, Logger: slog.New(slog.DiscardHandler)})
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- cache.Run(cctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	if err := cache.WaitForRevision(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := other.Create(ctx, fmt.Sprintf("/registry/leases/ns/x%d", i), []byte("other")); err != nil {
			t.Fatal(err)
		}
	}
	cur, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	began := time.Now()
	if err := cache.WaitForRevision(wctx, cur); err != nil {
		t.Fatalf("cache did not reach the store's revision %d: %v", cur, err)
	}
	t.Logf("cache reached revision %d (written elsewhere) in %v", cur, time.Since(began))
	if _, ok := cache.Get("/registry/leases/ns/x0"); ok {
		t.Fatal("the cache holds another installation's key")
	}
}

// decodeAny decodes nothing: every value is a Lease named after its key.
func decodeAny(key string, _ []byte, rev int64, _ runtime.Object) (runtime.Object, error) {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: key, ResourceVersion: strconv.FormatInt(rev, 10)}}, nil
}

// TestProgressNeedsFixedEtcd: on Debian's etcd (3.4.23 in bookworm, before
// the fix of etcd-io/etcd#15220) RequestProgress is refused as
// unsupported and a watch asking for progress gets none.
func TestProgressNeedsFixedEtcd(t *testing.T) {
	bin := testdeps.Debian(t, "etcd-server", "etcd")
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	var version string
	if _, err := fmt.Sscanf(string(out), "etcd Version: %s", &version); err != nil {
		t.Fatalf("etcd --version said %q: %v", out, err)
	}
	endpoint := startDebianEtcd(t, bin)
	s := newTestStore(t, endpoint, "")
	ctx := testContext(t)
	if progressSafe(version) {
		t.Skipf("Debian's etcd is %s, which has the fix: nothing to refuse", version)
	}
	err = s.RequestProgress(ctx)
	if !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("RequestProgress on etcd %s: %v, want ErrUnsupported", version, err)
	}
	rev, err := s.Create(ctx, "/registry/k/a", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	ch, err := storagetest.WatchEvents(ctx, t, s, "/registry/k/", rev-1, storage.WithProgressNotify)
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, ch); ev.Type != storage.EventPut || ev.Revision != rev {
		t.Fatalf("got %+v, want the put at %d", ev, rev)
	}
	// etcd itself answers the request; the driver must not pass it on.
	if err := s.Client().RequestProgress(clientv3.WithRequireLeader(ctx)); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-ch:
		t.Fatalf("got %+v on etcd %s, want no progress", ev, version)
	case <-time.After(300 * time.Millisecond):
	}
}

// startDebianEtcd runs a one-member etcd from bin on free ports, stopped
// (by its PID) when the test ends, and returns its client URL once it is
// healthy.
func startDebianEtcd(t *testing.T, bin string) string {
	t.Helper()
	clients, _ := startDebianCluster(t, bin, 1)
	return clients[0]
}
