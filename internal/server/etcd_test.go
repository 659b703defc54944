package server_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/internal/server"
	"github.com/leasehold/leasehold/internal/server/servertest"
	"github.com/leasehold/leasehold/internal/storage/etcd/etcdtest"
)

// TestServeOnEtcd runs serve with --etcd-servers against a real etcd:
// leases are created, updated and watched through client-go, their
// resourceVersions are etcd's revisions under --etcd-prefix, and a server
// restarted on the same etcd with a fresh data dir still has them.
func TestServeOnEtcd(t *testing.T) {
	endpoint := etcdtest.Start(t, etcdtest.Options{}).Endpoint
	onEtcd := func(c *server.Config) {
		c.EtcdServers = []string{endpoint}
		c.EtcdPrefix = "/leasehold-e2e/registry"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	first := servertest.Start(t, onEtcd)
	leases := first.Client.CoordinationV1().Leases("default")
	created, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "on-etcd"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("a"), LeaseDurationSeconds: ptr.To[int32](15)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	w, err := leases.Watch(ctx, metav1.ListOptions{ResourceVersion: created.ResourceVersion})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	created.Spec.HolderIdentity = ptr.To("b")
	updated, err := leases.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	select {
	case ev := <-w.ResultChan():
		l, ok := ev.Object.(*coordinationv1.Lease)
		if ev.Type != watch.Modified || !ok || l.ResourceVersion != updated.ResourceVersion || *l.Spec.HolderIdentity != "b" {
			t.Fatalf("watch event %s %+v, want MODIFIED at %s with holder b", ev.Type, ev.Object, updated.ResourceVersion)
		}
	case <-ctx.Done():
		t.Fatal("no watch event for the update")
	}

	// The lease is in etcd, under the prefix, at the resourceVersion served.
	raw, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = raw.Close() }()
	resp, err := raw.Get(ctx, "/leasehold-e2e/registry/leases/default/on-etcd")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || strconv.FormatInt(resp.Kvs[0].ModRevision, 10) != updated.ResourceVersion {
		t.Fatalf("etcd holds %v for the lease, want one key at revision %s", resp.Kvs, updated.ResourceVersion)
	}
	if _, err := os.Stat(filepath.Join(first.DataDir, "db")); !os.IsNotExist(err) {
		t.Fatalf("serve on etcd made an embedded database in its data dir (stat: %v)", err)
	}
	w.Stop()
	first.Stop()

	// A new server, new data dir, same etcd: the data is there.
	second := servertest.Start(t, onEtcd)
	got, err := second.Client.CoordinationV1().Leases("default").Get(ctx, "on-etcd", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get after restart: %v", err)
	}
	if got.ResourceVersion != updated.ResourceVersion || *got.Spec.HolderIdentity != "b" {
		t.Fatalf("after restart: holder %q at %s, want b at %s", *got.Spec.HolderIdentity, got.ResourceVersion, updated.ResourceVersion)
	}
}
