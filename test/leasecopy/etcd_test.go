package leasecopy

import (
	"bytes"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestCopyToEtcd: leases copied into etcd are stored as kube-apiserver
// stores them (a `leasehold serve --etcd-servers` on that etcd, which reads
// Kubernetes' own storage format, serves exactly the copied content, uid
// and creationTimestamp), an equal second pass writes nothing, a newer
// write made in etcd meanwhile is not clobbered by an older source, and a
// newer source still goes through.
func TestCopyToEtcd(t *testing.T) {
	endpoint := startEtcd(t)
	src := startServe(t)
	now := time.Now().Truncate(time.Microsecond)
	want := create(t, src.Client, fullLease("team-a", "alpha", now), nodeLease("node-1", now))
	toEtcd := []string{"--from-kubeconfig", src.Kubeconfig, "--to-etcd-servers", endpoint, "--etcd-prefix", "/registry"}

	out, code := runCopy(t, toEtcd...)
	if code != 0 {
		t.Fatalf("leases copy to etcd exited %d:\n%s", code, out)
	}
	t.Logf("first pass:\n%s", out)

	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	modRevision := func(key string) int64 {
		t.Helper()
		resp, err := etcd.Get(ctxFor(t, 10*time.Second), key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("etcd get %s: %v (%d keys)", key, err, len(resp.Kvs))
		}
		if !bytes.HasPrefix(resp.Kvs[0].Value, []byte("k8s\x00")) {
			t.Fatalf("%s is not in Kubernetes' protobuf envelope: %q", key, resp.Kvs[0].Value[:min(16, len(resp.Kvs[0].Value))])
		}
		return resp.Kvs[0].ModRevision
	}
	alphaKey := "/registry/leases/team-a/alpha"
	revs := map[string]int64{alphaKey: modRevision(alphaKey), "/registry/leases/kube-node-lease/node-1": modRevision("/registry/leases/kube-node-lease/node-1")}

	onEtcd := startServe(t, "--etcd-servers", endpoint, "--etcd-prefix", "/registry")
	requireCopied(t, onEtcd.Client, want...)
	for _, w := range want {
		got := get(t, onEtcd.Client, w.Namespace, w.Name)
		if got.UID != w.UID || !got.CreationTimestamp.Equal(&w.CreationTimestamp) {
			t.Errorf("%s/%s in etcd: uid %s created %v, want the source's %s, %v", w.Namespace, w.Name, got.UID, got.CreationTimestamp, w.UID, w.CreationTimestamp)
		}
	}

	out, code = runCopy(t, toEtcd...)
	if code != 0 {
		t.Fatalf("second pass exited %d:\n%s", code, out)
	}
	for key, rev := range revs {
		if now := modRevision(key); now != rev {
			t.Errorf("%s rewritten by an equal second pass (mod revision %d -> %d)", key, rev, now)
		}
	}

	// A writer that reaches etcd directly (here through the etcd-backed
	// server, as a kube-apiserver would) renews alpha later than the
	// source's next change, which also edits an annotation.
	ctx := ctxFor(t, time.Minute)
	direct := get(t, onEtcd.Client, "team-a", "alpha")
	direct.Spec.RenewTime = &metav1.MicroTime{Time: now.Add(time.Hour)}
	direct, err = onEtcd.Client.CoordinationV1().Leases("team-a").Update(ctx, direct, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	older := get(t, src.Client, "team-a", "alpha")
	older.Spec.RenewTime = &metav1.MicroTime{Time: now.Add(time.Minute)}
	older.Annotations["example.com/note"] = "older"
	if _, err := src.Client.CoordinationV1().Leases("team-a").Update(ctx, older, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, code = runCopy(t, append(toEtcd, "-n", "team-a")...)
	if code != 0 || !strings.Contains(out, "copied 0, updated 0, unchanged 0, target newer 1") {
		t.Fatalf("copy over a newer etcd write: exit %d, want it counted as target newer:\n%s", code, out)
	}
	if d := contentDiff(direct, get(t, onEtcd.Client, "team-a", "alpha")); d != "" {
		t.Fatalf("the newer write in etcd was clobbered: %s", d)
	}

	// A newer source (the next term) wins, and the etcd object keeps its
	// identity.
	newer := get(t, src.Client, "team-a", "alpha")
	newer.Spec.RenewTime = &metav1.MicroTime{Time: now.Add(2 * time.Hour)}
	newer.Spec.LeaseTransitions = ptr.To(*newer.Spec.LeaseTransitions + 1)
	newer, err = src.Client.CoordinationV1().Leases("team-a").Update(ctx, newer, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, code = runCopy(t, append(toEtcd, "-n", "team-a")...)
	if code != 0 || !strings.Contains(out, "copied 0, updated 1,") {
		t.Fatalf("copy of a newer source: exit %d, want one update:\n%s", code, out)
	}
	waitFor(t, 5*time.Second, "newer source served from etcd", func() bool {
		return contentDiff(newer, get(t, onEtcd.Client, "team-a", "alpha")) == ""
	})
	if got := get(t, onEtcd.Client, "team-a", "alpha"); got.UID != direct.UID {
		t.Errorf("uid changed from %s to %s on update", direct.UID, got.UID)
	}
}

// TestFollowToEtcd: a --follow copy into etcd carries renewals and deletes
// to a kube-apiserver-style reader of that etcd (a leasehold serve
// --etcd-servers, serving watches from it) within a second each, as the
// old watches after the switch need.
func TestFollowToEtcd(t *testing.T) {
	endpoint := startEtcd(t)
	src := startServe(t)
	onEtcd := startServe(t, "--etcd-servers", endpoint)
	now := time.Now().Truncate(time.Microsecond)
	create(t, src.Client, nodeLease("node-1", now), nodeLease("node-2", now))

	follow := startProc(t, "leases copy --follow", binary, "leases", "copy", "--follow", "--for", "2m", "-n", "kube-node-lease",
		"--from-kubeconfig", src.Kubeconfig, "--to-etcd-servers", endpoint)
	follow.WaitLine(0, time.Minute, "following the source's leases")
	ctx := ctxFor(t, time.Minute)
	leases := src.Client.CoordinationV1().Leases("kube-node-lease")
	for range 3 {
		l := get(t, src.Client, "kube-node-lease", "node-1")
		l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Truncate(time.Microsecond)}
		renewed, err := leases.Update(ctx, l, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, time.Second, "renewal served from etcd", func() bool {
			return contentDiff(renewed, get(t, onEtcd.Client, "kube-node-lease", "node-1")) == ""
		})
	}
	if err := leases.Delete(ctx, "node-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Second, "delete served from etcd", func() bool {
		return get(t, onEtcd.Client, "kube-node-lease", "node-2") == nil
	})
	if err := follow.Stop(); err != nil {
		t.Fatalf("leases copy --follow after SIGTERM: %v", err)
	}
	if summary := follow.WaitLine(0, time.Second, "leases copy done"); !strings.Contains(summary, "copied 2, updated 3, unchanged 0, target newer 0, deleted 1, errors 0") {
		t.Errorf("summary %q: want 2 copied, 3 renewals, 1 delete", summary)
	}
}
