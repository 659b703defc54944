package etcd

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/storage/etcd/etcdtest"
	"github.com/leasehold/leasehold/internal/storage/storagetest"
)

// TestPrefixMapping checks where keys land in etcd: the leading "/registry"
// is replaced by Config.Prefix, and stores with different prefixes do not
// see each other's keys.
func TestPrefixMapping(t *testing.T) {
	ctx := testContext(t)
	endpoint := etcdtest.Start(t, etcdtest.Options{}).Endpoint
	tenant := newTestStore(t, endpoint, "/tenant-a/registry/") // trailing slash is ignored
	verbatim := newTestStore(t, endpoint, "")

	rev, err := tenant.Create(ctx, "/registry/leases/ns/a", []byte("tenant"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verbatim.Create(ctx, "/registry/leases/ns/a", []byte("default")); err != nil {
		t.Fatalf("the default-prefix store sees the tenant's key: %v", err)
	}

	raw := verbatim.Client()
	for etcdKey, want := range map[string]string{
		"/tenant-a/registry/leases/ns/a": "tenant",
		"/registry/leases/ns/a":          "default",
	} {
		resp, err := raw.Get(ctx, etcdKey)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != want {
			t.Fatalf("etcd key %s holds %v, want %q", etcdKey, resp.Kvs, want)
		}
	}

	res, err := tenant.List(ctx, "/registry/", storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.KVs) != 1 || res.KVs[0].Key != "/registry/leases/ns/a" || res.KVs[0].ModRevision != rev {
		t.Fatalf("tenant List = %+v, want only its own key at revision %d", res.KVs, rev)
	}
	if _, err := tenant.Get(ctx, "/elsewhere/x"); err == nil {
		t.Fatal("Get of a key outside /registry succeeded")
	}
}

// TestCompactedRevisionFromElsewhere checks that CompactedRevision sees
// compactions this Store did not make: another replica's and etcd's own.
func TestCompactedRevisionFromElsewhere(t *testing.T) {
	ctx := testContext(t)
	endpoint := etcdtest.Start(t, etcdtest.Options{})
	a := newTestStore(t, endpoint.Endpoint, "")
	b := newTestStore(t, endpoint.Endpoint, "")

	if got, err := b.CompactedRevision(ctx); err != nil || got != 0 {
		t.Fatalf("CompactedRevision of a fresh cluster = %d, %v; want 0", got, err)
	}
	var revs []int64
	for i := range 40 {
		rev, err := a.Create(ctx, "/registry/k/"+string(rune('a'+i%26))+string(rune('a'+i/26)), []byte("v"))
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, rev)
	}
	if err := a.Compact(ctx, revs[17]); err != nil {
		t.Fatal(err)
	}
	if got, err := b.CompactedRevision(ctx); err != nil || got != revs[17] {
		t.Fatalf("other store's CompactedRevision = %d, %v; want %d", got, err, revs[17])
	}
	// A compaction by a plain etcd client (as etcd's auto-compaction does).
	if _, err := a.Client().Compact(ctx, revs[31]); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Store{a, b} {
		if got, err := s.CompactedRevision(ctx); err != nil || got != revs[31] {
			t.Fatalf("CompactedRevision after a raw compaction = %d, %v; want %d", got, err, revs[31])
		}
	}
	// Compacting again below the compacted revision changes nothing.
	if err := b.Compact(ctx, revs[5]); err != nil {
		t.Fatalf("Compact below the compacted revision: %v", err)
	}
	if got, _ := b.CompactedRevision(ctx); got != revs[31] {
		t.Fatalf("CompactedRevision moved back to %d", got)
	}
	// Compacting in the future is refused.
	if err := b.Compact(ctx, revs[39]+100); !errors.Is(err, storage.ErrFutureRevision) {
		t.Fatalf("Compact in the future: %v, want ErrFutureRevision", err)
	}
}

// TestCompactor checks that Config.CompactInterval compacts on its own, at a
// revision at least one interval old.
func TestCompactor(t *testing.T) {
	ctx := testContext(t)
	endpoint := etcdtest.Start(t, etcdtest.Options{}).Endpoint
	s, err := New(ctx, Config{Endpoints: []string{endpoint}, CompactInterval: 50 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()
	first, err := s.Create(ctx, "/registry/k/a", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	for {
		compacted, err := s.CompactedRevision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if compacted >= first {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no automatic compaction at or after revision %d (compacted: %d)", first, compacted)
		}
		if _, err := s.Create(ctx, "/registry/k/"+time.Now().String(), []byte("v")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCloseEndsWatches checks that Close closes open watch channels and that
// the Store refuses calls afterwards.
func TestCloseEndsWatches(t *testing.T) {
	ctx := testContext(t)
	endpoint := etcdtest.Start(t, etcdtest.Options{}).Endpoint
	s, err := New(ctx, Config{Endpoints: []string{endpoint}})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := storagetest.WatchEvents(ctx, t, s, "/registry/", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("an event arrived on a watch of an empty store")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch channel still open after Close")
	}
	if _, err := s.Get(ctx, "/registry/x"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close: %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestNewUnreachable checks that New gives up within its dial timeout when
// nothing answers, instead of hanging until the first request.
func TestNewUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = New(context.Background(), Config{Endpoints: []string{"http://" + addr}, DialTimeout: time.Second})
	if err == nil {
		t.Fatal("New succeeded against a closed port")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("New took %v to fail with a 1s dial timeout", d)
	}
}

// TestTLS runs the driver against an etcd that requires client certificates.
func TestTLS(t *testing.T) {
	ctx := testContext(t)
	srv := etcdtest.Start(t, etcdtest.Options{TLS: true})
	s, err := New(ctx, Config{Endpoints: []string{srv.Endpoint}, CAFile: srv.CAFile,
		CertFile: srv.CertFile, KeyFile: srv.KeyFile, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("New with a client certificate: %v", err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()
	if _, err := s.Create(ctx, "/registry/k/tls", []byte("v")); err != nil {
		t.Fatal(err)
	}

	// Without the client certificate etcd refuses the connection.
	_, err = New(ctx, Config{Endpoints: []string{srv.Endpoint}, CAFile: srv.CAFile, DialTimeout: 2 * time.Second})
	if err == nil {
		t.Fatal("New without a client certificate succeeded")
	}
}

// TestConfigErrors checks the configuration mistakes New refuses up front.
func TestConfigErrors(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no endpoints":    {},
		"relative prefix": {Endpoints: []string{"http://127.0.0.1:1"}, Prefix: "registry"},
		"cert, no key":    {Endpoints: []string{"http://127.0.0.1:1"}, CertFile: "c.crt"},
		"missing CA file": {Endpoints: []string{"http://127.0.0.1:1"}, CAFile: "/nonexistent/ca.crt"},
	} {
		if _, err := New(context.Background(), cfg); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}
