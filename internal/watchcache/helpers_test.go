package watchcache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/leasehold/leasehold/internal/storage"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const leasePrefix = "/registry/leases/"

func leaseKey(ns, name string) string { return leasePrefix + ns + "/" + name }

// encodeLease is how the tests store a Lease: JSON, like any opaque value.
func encodeLease(t testing.TB, ns, name, holder string, labels map[string]string) []byte {
	t.Helper()
	l := &coordinationv1.Lease{
		TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
	}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatalf("encoding lease: %v", err)
	}
	return b
}

func decodeLease(_ string, value []byte, rev int64, _ runtime.Object) (runtime.Object, error) {
	l := &coordinationv1.Lease{}
	if err := json.Unmarshal(value, l); err != nil {
		return nil, fmt.Errorf("decoding lease: %w", err)
	}
	l.ResourceVersion = strconv.FormatInt(rev, 10)
	return l, nil
}

func holderOf(obj runtime.Object) string {
	l := obj.(*coordinationv1.Lease)
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func rvOf(t testing.TB, obj runtime.Object) int64 {
	t.Helper()
	rv, err := strconv.ParseInt(obj.(*coordinationv1.Lease).ResourceVersion, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion: %v", err)
	}
	return rv
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startCache runs a cache over s until the test ends and waits for it to be ready.
func startCache(t testing.TB, s storage.Interface, opts Options) *Cache {
	t.Helper()
	if opts.Prefix == "" {
		opts.Prefix = "/registry/"
	}
	if opts.Decode == nil {
		opts.Decode = decodeLease
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	c := New(s, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := c.WaitReady(wctx); err != nil {
		t.Fatalf("WaitReady: %v", err)
	}
	return c
}

func newStoreT(t testing.TB) *memStore {
	s := newMemStore()
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustWatch(t testing.TB, c *Cache, opts WatchOptions) *Watcher {
	t.Helper()
	w, err := c.Watch(testCtx(t), opts)
	if err != nil {
		t.Fatalf("Watch(%+v): %v", opts, err)
	}
	t.Cleanup(w.Stop)
	return w
}

func create(t testing.TB, s storage.Interface, ns, name, holder string, labels map[string]string) int64 {
	t.Helper()
	rev, err := s.Create(context.Background(), leaseKey(ns, name), encodeLease(t, ns, name, holder, labels))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return rev
}

func update(t testing.TB, s storage.Interface, ns, name, holder string, labels map[string]string) int64 {
	t.Helper()
	rev, err := storage.GuaranteedUpdate(context.Background(), s, leaseKey(ns, name), func(storage.KeyValue) ([]byte, error) {
		return encodeLease(t, ns, name, holder, labels), nil
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	return rev
}

func remove(t testing.TB, s storage.Interface, ns, name string) int64 {
	t.Helper()
	_, rev, err := s.Delete(context.Background(), leaseKey(ns, name), 0)
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	return rev
}

var errClosed = errors.New("watcher channel closed")

// next reads one event or fails the test after a timeout.
func next(t testing.TB, w *Watcher) Event {
	t.Helper()
	ev, err := nextErr(w, 5*time.Second)
	if err != nil {
		t.Fatalf("next event: %v", err)
	}
	return ev
}

func nextErr(w *Watcher, timeout time.Duration) (Event, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case ev, ok := <-w.Events():
		if !ok {
			return Event{}, errClosed
		}
		return ev, nil
	case <-timer.C:
		return Event{}, errors.New("timed out")
	}
}

// nextNonBookmark skips bookmarks.
func nextNonBookmark(t testing.TB, w *Watcher) Event {
	t.Helper()
	for {
		ev := next(t, w)
		if ev.Type != watch.Bookmark {
			return ev
		}
	}
}

// expectNothing checks that no event arrives within d.
func expectNothing(t testing.TB, w *Watcher, d time.Duration) {
	t.Helper()
	if ev, err := nextErr(w, d); err == nil {
		t.Fatalf("unexpected event %s %s rev %d", ev.Type, ev.Key, ev.Rev)
	}
}
