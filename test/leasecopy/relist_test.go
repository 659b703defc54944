package leasecopy

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// TestFollowRelistsAfterSourceRestart: a --follow copy outlives its
// source. The source (a leasehold serve on etcd) stops; meanwhile a lease
// is deleted behind its back, straight in etcd, and etcd's history is
// compacted, so no watch can replay the delete. When the source is back,
// the copy's watch cannot resume (410 Gone), it re-lists, finds the lease
// gone and deletes it on the target; renewals flow again.
func TestFollowRelistsAfterSourceRestart(t *testing.T) {
	endpoint := startEtcd(t)
	dataDir := filepath.Join(t.TempDir(), "src")
	port := fmt.Sprint(testdeps.FreePort(t))
	srcArgs := []string{"--etcd-servers", endpoint, "--secure-port", port}
	src := startServeIn(t, dataDir, srcArgs...)
	dst := startServe(t)
	now := time.Now().Truncate(time.Microsecond)
	create(t, src.Client, fullLease("team-a", "kept", now), fullLease("team-a", "gone", now))

	follow := startProc(t, "leases copy --follow", binary, "leases", "copy", "--follow", "--for", "3m",
		"-n", "team-a", "--from-kubeconfig", src.Kubeconfig, "--to-kubeconfig", dst.Kubeconfig)
	follow.WaitLine(0, time.Minute, "following the source's leases")

	if err := src.Stop(); err != nil {
		t.Fatalf("source after SIGTERM: %v", err)
	}
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	ctx := ctxFor(t, 2*time.Minute)
	del, err := etcd.Delete(ctx, "/registry/leases/team-a/gone")
	if err != nil || del.Deleted != 1 {
		t.Fatalf("deleting the lease in etcd: %v (%d deleted)", err, del.Deleted)
	}
	if _, err := etcd.Compact(ctx, del.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}

	src = startServeIn(t, dataDir, srcArgs...)
	// The copy's reflector backs off while the source is down, up to
	// about 30 s between attempts.
	waitFor(t, time.Minute, "the delete found by the re-list reaches the target", func() bool {
		return get(t, dst.Client, "team-a", "gone") == nil
	})
	l := get(t, src.Client, "team-a", "kept")
	l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Truncate(time.Microsecond)}
	renewed, err := src.Client.CoordinationV1().Leases("team-a").Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "a renewal after the restart", func() bool {
		return contentDiff(renewed, get(t, dst.Client, "team-a", "kept")) == ""
	})
	if err := follow.Stop(); err != nil {
		t.Fatalf("leases copy --follow after SIGTERM: %v", err)
	}
	if summary := follow.WaitLine(0, time.Second, "leases copy done"); !strings.Contains(summary, "deleted 1, errors 0") {
		t.Errorf("summary %q: want one delete and no errors", summary)
	}
}

// TestFollowRetriesThroughTargetRestart: a --follow copy does not drop a
// renewal it could not write while its target was down: it reports the
// lease once, keeps retrying (at least every 5 s), writes it when the
// target is back, and ends without errors.
func TestFollowRetriesThroughTargetRestart(t *testing.T) {
	src := startServe(t)
	dataDir := filepath.Join(t.TempDir(), "dst")
	dstArgs := []string{"--secure-port", fmt.Sprint(testdeps.FreePort(t))}
	dst := startServeIn(t, dataDir, dstArgs...)
	create(t, src.Client, nodeLease("node-1", time.Now().Truncate(time.Microsecond)))
	follow := startProc(t, "leases copy --follow", binary, "leases", "copy", "--follow", "--for", "3m",
		"-n", "kube-node-lease", "--from-kubeconfig", src.Kubeconfig, "--to-kubeconfig", dst.Kubeconfig)
	follow.WaitLine(0, time.Minute, "following the source's leases")

	if err := dst.Stop(); err != nil {
		t.Fatalf("target after SIGTERM: %v", err)
	}
	ctx := ctxFor(t, 2*time.Minute)
	l := get(t, src.Client, "kube-node-lease", "node-1")
	l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Truncate(time.Microsecond)}
	renewed, err := src.Client.CoordinationV1().Leases("kube-node-lease").Update(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	line := follow.WaitLine(0, 10*time.Second, "error: lease kube-node-lease/node-1: ")
	if !strings.Contains(line, "Unable to connect to the server") || !strings.HasSuffix(line, "(retrying)") {
		t.Errorf("error line %q: want kubectl's connection error, retrying", line)
	}

	dst = startServeIn(t, dataDir, dstArgs...)
	took := waitFor(t, 15*time.Second, "the renewal written once the target is back", func() bool {
		return contentDiff(renewed, get(t, dst.Client, "kube-node-lease", "node-1")) == ""
	})
	t.Logf("renewal reached the restarted target %v after it served", took)
	if err := follow.Stop(); err != nil {
		t.Fatalf("leases copy --follow after SIGTERM: %v", err)
	}
	if summary := follow.WaitLine(0, time.Second, "leases copy done"); !strings.Contains(summary, "updated 1, unchanged 0, target newer 0, deleted 0, errors 0") {
		t.Errorf("summary %q: want the renewal as one update and no errors", summary)
	}
}
