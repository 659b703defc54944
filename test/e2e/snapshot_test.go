package e2e

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An online backup of the embedded store, taken while clients write,
// restores into a new data dir where every lease is exactly as
// acknowledged at the snapshot's revision, resourceVersion included, and a
// client holding an older resourceVersion is told to relist (410).
func TestSnapshotOnlineBackupRestoresAtOneRevision(t *testing.T) {
	srv := startServer(t)
	_, cs := adminClient(t, srv)
	var ledger snapshotLedger
	stop := leaseWriters(t, cs, "default", 4, 25, &ledger)
	defer stop()
	time.Sleep(2 * time.Second) // writes before, during and after the save

	file := filepath.Join(t.TempDir(), "backup.snap")
	rev := snapshotRevision(t, runLeasehold(t, "snapshot", "save", file, "--kubeconfig", srv.Kubeconfig))
	time.Sleep(time.Second)
	stop()
	if !strings.Contains(runLeasehold(t, "snapshot", "status", file), "revision "+strconv.FormatInt(rev, 10)) {
		t.Error("status does not report the saved revision")
	}

	// A user outside system:masters may not read the store.
	bob := filepath.Join(t.TempDir(), "bob.kubeconfig")
	runLeasehold(t, "credentials", "user", "bob", "--data-dir", srv.DataDir, "--server", srv.URL, "--out", bob)
	out, err := tryLeasehold("snapshot", "save", filepath.Join(t.TempDir(), "bob.snap"), "--kubeconfig", bob)
	if err == nil || !strings.Contains(out, "forbidden") {
		t.Errorf("snapshot save as bob: %v %s, want forbidden", err, out)
	}

	dataDir := filepath.Join(t.TempDir(), "restored")
	runLeasehold(t, "snapshot", "restore", file, "--data-dir", dataDir)
	restored := startServerIn(t, dataDir)
	_, rcs := adminClient(t, restored)
	want := ledger.at(rev)
	checkLeases(t, rcs, "default", want)
	for name, rv := range kubectlLeaseRVs(t, restored, "default") {
		if strconv.FormatInt(want[name].rv, 10) != rv {
			t.Errorf("kubectl: lease %s at resourceVersion %s, want %d", name, rv, want[name].rv)
		}
	}
	var oldest int64 = rev
	for _, w := range ledger.at(rev) {
		oldest = min(oldest, w.rv)
	}
	checkOldResourceVersion(t, rcs, "default", oldest-1)

	// A client that read a lease before the backup updates it with that
	// resourceVersion, as it would have on the old server.
	for name, w := range want {
		l, err := rcs.CoordinationV1().Leases("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l.ResourceVersion = strconv.FormatInt(w.rv, 10)
		if _, err := rcs.CoordinationV1().Leases("default").Update(context.Background(), l, metav1.UpdateOptions{}); err != nil {
			t.Errorf("update %s at its restored resourceVersion: %v", name, err)
		}
		break
	}
}

// A fleet moves from the embedded store to etcd and back: each move is a
// snapshot and a restore, every lease keeps its resourceVersion, and
// clients read everything with client-go and kubectl.
func TestSnapshotMovesEmbeddedToEtcdAndBack(t *testing.T) {
	srv := startServer(t)
	_, cs := adminClient(t, srv)
	var ledger snapshotLedger
	stop := leaseWriters(t, cs, "kube-node-lease", 2, 50, &ledger)
	time.Sleep(2 * time.Second)
	stop()
	srv.Stop()

	// Offline save of the stopped server's store, into etcd's format.
	file := filepath.Join(t.TempDir(), "embedded.snap")
	rev := snapshotRevision(t, runLeasehold(t, "snapshot", "save", file, "--data-dir", srv.DataDir))
	db := filepath.Join(t.TempDir(), "leases.db")
	runLeasehold(t, "snapshot", "restore", file, "--etcd-snapshot-db", db)
	endpoint := etcdFromSnapshot(t, db)

	onEtcd := startServer(t, "--etcd-servers", endpoint)
	_, ecs := adminClient(t, onEtcd)
	checkLeases(t, ecs, "kube-node-lease", ledger.at(rev))
	if got := len(kubectlLeaseRVs(t, onEtcd, "kube-node-lease")); got != len(ledger.at(rev)) {
		t.Errorf("kubectl lists %d leases on etcd, want %d", got, len(ledger.at(rev)))
	}
	checkOldResourceVersion(t, ecs, "kube-node-lease", rev-1)

	// Renewals on etcd, then back to a new embedded store through the
	// etcd-backed server's online snapshot.
	stop = leaseWriters(t, ecs, "kube-node-lease", 2, 50, &ledger)
	time.Sleep(time.Second)
	stop()
	back := filepath.Join(t.TempDir(), "etcd.snap")
	rev2 := snapshotRevision(t, runLeasehold(t, "snapshot", "save", back, "--kubeconfig", onEtcd.Kubeconfig))
	if rev2 <= rev {
		t.Fatalf("snapshot from etcd at revision %d, not after the first one's %d", rev2, rev)
	}
	onEtcd.Stop()
	dataDir := filepath.Join(t.TempDir(), "back")
	runLeasehold(t, "snapshot", "restore", back, "--data-dir", dataDir)
	home := startServerIn(t, dataDir)
	_, hcs := adminClient(t, home)
	checkLeases(t, hcs, "kube-node-lease", ledger.at(rev2))
	checkOldResourceVersion(t, hcs, "kube-node-lease", rev2-1)
}
