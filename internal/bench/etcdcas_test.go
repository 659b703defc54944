package bench

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/storage/etcd/etcdtest"
)

// TestEtcdCAS runs the raw compare-and-put workload briefly against a real
// etcd: every swap succeeds (each client owns its keys), and each key ends
// at the revision the workload last wrote, so none was skipped or
// double-counted.
func TestEtcdCAS(t *testing.T) {
	srv := etcdtest.Start(t, etcdtest.Options{})
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Close() }()
	cfg := Config{Namespace: "test", Duration: 500 * time.Millisecond, Clients: 4, Leases: 10}
	w, err := NewEtcdCASWorkload(cfg, client, 100)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), cfg, w)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops == 0 || res.ErrorsTotal != 0 {
		t.Fatalf("%d swaps, errors %v; want some and none", res.Ops, res.Errors)
	}
	for i, rev := range w.revs {
		got, err := client.Get(context.Background(), w.key(i))
		if err != nil || len(got.Kvs) != 1 || got.Kvs[0].ModRevision != rev || len(got.Kvs[0].Value) != 100 {
			t.Fatalf("key %d: %v %v, want a 100-byte value at revision %d", i, got, err, rev)
		}
	}
	if _, err := NewEtcdCASWorkload(Config{Namespace: "x", Duration: time.Second, Clients: 4, Leases: 3}, client, 100); err == nil {
		t.Error("fewer keys than clients accepted")
	}
}
