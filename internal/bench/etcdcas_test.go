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
	client := etcdCASClient(t)
	w, res := runEtcdCAS(t, client, Config{Namespace: "test", Duration: 500 * time.Millisecond, Clients: 4, Leases: 10})
	if res.Ops == 0 || res.ErrorsTotal != 0 {
		t.Fatalf("%d swaps, errors %v; want some and none", res.Ops, res.Errors)
	}
	wantKeysAsWritten(t, client, w)
	if _, err := NewEtcdCASWorkload(Config{Namespace: "x", Duration: time.Second, Clients: 4, Leases: 3}, client, 100); err == nil {
		t.Error("fewer keys than clients accepted")
	}
}

// TestEtcdCASPaced runs the paced workload: 20 keys each swapped every
// 200 ms for 1 s make 100 swaps (one more round may start as the period
// ends), not the thousands the back-to-back workload makes, and every key
// still ends at the revision its last swap wrote.
func TestEtcdCASPaced(t *testing.T) {
	client := etcdCASClient(t)
	w, res := runEtcdCAS(t, client, Config{Namespace: "paced", Duration: time.Second, Clients: 4, Leases: 20, Interval: 200 * time.Millisecond})
	if res.Ops < 90 || res.Ops > 120 || res.ErrorsTotal != 0 {
		t.Fatalf("%d swaps, errors %v; want 100 (90-120) and none", res.Ops, res.Errors)
	}
	wantKeysAsWritten(t, client, w)
	if _, err := NewEtcdCASWorkload(Config{Namespace: "x", Duration: time.Second, Clients: 1, Leases: 3, Interval: -time.Second}, client, 100); err == nil {
		t.Error("negative interval accepted")
	}
}

// runEtcdCAS sets up and runs the workload cfg describes, 100-byte
// values, and returns it with its result.
func runEtcdCAS(t *testing.T, client *clientv3.Client, cfg Config) (*EtcdCASWorkload, Result) {
	t.Helper()
	w, err := NewEtcdCASWorkload(cfg, client, 100)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), cfg, w)
	if err != nil {
		t.Fatal(err)
	}
	return w, res
}

func etcdCASClient(t *testing.T) *clientv3.Client {
	t.Helper()
	srv := etcdtest.Start(t, etcdtest.Options{})
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// wantKeysAsWritten checks that every key of w is at the revision w last
// wrote it at, with a 100-byte value: no swap was lost or counted twice.
func wantKeysAsWritten(t *testing.T, client *clientv3.Client, w *EtcdCASWorkload) {
	t.Helper()
	for i, rev := range w.revs {
		got, err := client.Get(context.Background(), w.key(i))
		if err != nil || len(got.Kvs) != 1 || got.Kvs[0].ModRevision != rev || len(got.Kvs[0].Value) != 100 {
			t.Fatalf("key %d: %v %v, want a 100-byte value at revision %d", i, got, err, rev)
		}
	}
}
