package leasecopy

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// startPair starts the source and target servers side by side.
func startPair(t *testing.T) (src, dst *server) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Go(func() { src = startServe(t) })
	dst = startServe(t)
	wg.Wait()
	if src == nil {
		t.FailNow() // startServe failed in the other goroutine
	}
	return src, dst
}

// TestCopyOnceBetweenAPIs: one pass from one Leasehold to another creates
// what is missing (into a namespace the target lacks), updates what is
// older, keeps what only the target has, and a second pass writes nothing.
func TestCopyOnceBetweenAPIs(t *testing.T) {
	src, dst := startPair(t)
	now := time.Now().Truncate(time.Microsecond)
	want := create(t, src.Client, fullLease("team-a", "alpha", now), nodeLease("node-1", now), fullLease("team-a", "beta", now))
	// The target has an older beta (fewer transitions, no labels) and a
	// lease the source does not have.
	oldBeta := fullLease("team-a", "beta", now.Add(-time.Hour))
	oldBeta.Spec.LeaseTransitions = ptr.To[int32](1)
	oldBeta.Labels = nil
	create(t, dst.Client, oldBeta, nodeLease("target-only", now))

	out, code := runCopy(t, "--from-kubeconfig", src.Kubeconfig, "--to-kubeconfig", dst.Kubeconfig)
	if code != 0 {
		t.Fatalf("leases copy exited %d:\n%s", code, out)
	}
	t.Logf("first pass:\n%s", out)
	requireCopied(t, dst.Client, want...)
	if get(t, dst.Client, "kube-node-lease", "target-only") == nil {
		t.Fatal("the first pass deleted a lease only the target had")
	}

	// Equal content: no write, so no new resourceVersion.
	before := map[string]string{}
	for _, w := range want {
		before[w.Name] = get(t, dst.Client, w.Namespace, w.Name).ResourceVersion
	}
	out, code = runCopy(t, "--from-kubeconfig", src.Kubeconfig, "--to-kubeconfig", dst.Kubeconfig, "--namespace", "team-a")
	if code != 0 || !strings.Contains(out, "copied 0, updated 0, unchanged 2, target newer 0, deleted 0, errors 0") {
		t.Fatalf("second pass over team-a: exit %d, want every lease unchanged:\n%s", code, out)
	}
	for _, w := range want {
		if rv := get(t, dst.Client, w.Namespace, w.Name).ResourceVersion; rv != before[w.Name] {
			t.Errorf("%s/%s was written although its content was equal (resourceVersion %s -> %s)", w.Namespace, w.Name, before[w.Name], rv)
		}
	}

	// A source user RBAC lets read nothing: kubectl's words, exit 1.
	nobody := filepath.Join(t.TempDir(), "nobody.kubeconfig")
	if out, code := runLeasehold(t, "credentials", "user", "nobody", "--data-dir", src.DataDir, "--server", serverURL(t, src), "--out", nobody); code != 0 {
		t.Fatalf("credentials user: exit %d:\n%s", code, out)
	}
	out, code = runCopy(t, "--from-kubeconfig", nobody, "--to-kubeconfig", dst.Kubeconfig)
	if code != 1 || !strings.Contains(out, "listing leases on the source: Error from server (Forbidden)") {
		t.Errorf("copy as a user without permissions: exit %d, want 1 and kubectl's Forbidden:\n%s", code, out)
	}
}

// TestFollowBetweenAPIs: with --follow, renewals on the source reach the
// target within a second each, a new lease and a delete propagate, a lease
// nobody touches is never rewritten, and SIGTERM ends the copy with exit 0
// and its summary.
func TestFollowBetweenAPIs(t *testing.T) {
	src, dst := startPair(t)
	now := time.Now().Truncate(time.Microsecond)
	create(t, src.Client, fullLease("team-a", "leader", now), fullLease("team-a", "quiet", now), nodeLease("node-1", now))

	follow := startProc(t, "leases copy --follow", binary, "leases", "copy", "--follow", "--for", "2m",
		"--from-kubeconfig", src.Kubeconfig, "--to-kubeconfig", dst.Kubeconfig)
	follow.WaitLine(0, time.Minute, "following the source's leases")
	requireCopied(t, dst.Client, get(t, src.Client, "team-a", "leader"), get(t, src.Client, "kube-node-lease", "node-1"))
	quietRV := get(t, dst.Client, "team-a", "quiet").ResourceVersion

	ctx := ctxFor(t, time.Minute)
	srcLeases := src.Client.CoordinationV1().Leases("team-a")
	var slowest time.Duration
	for i := range 5 {
		l := get(t, src.Client, "team-a", "leader")
		l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Truncate(time.Microsecond)}
		if i == 4 { // a new term: holder and transitions move too
			l.Spec.HolderIdentity = ptr.To("demo-7d9f_2")
			l.Spec.LeaseTransitions = ptr.To(*l.Spec.LeaseTransitions + 1)
		}
		renewed, err := srcLeases.Update(ctx, l, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		took := waitFor(t, time.Second, "renewal on the target", func() bool {
			return contentDiff(renewed, get(t, dst.Client, "team-a", "leader")) == ""
		})
		slowest = max(slowest, took)
	}
	t.Logf("slowest renewal to reach the target: %v", slowest)

	born := create(t, src.Client, nodeLease("node-2", time.Now().Truncate(time.Microsecond)))[0]
	waitFor(t, time.Second, "new lease on the target", func() bool {
		return contentDiff(born, get(t, dst.Client, "kube-node-lease", "node-2")) == ""
	})
	if err := src.Client.CoordinationV1().Leases("kube-node-lease").Delete(ctx, "node-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Second, "delete on the target", func() bool {
		return get(t, dst.Client, "kube-node-lease", "node-1") == nil
	})
	if rv := get(t, dst.Client, "team-a", "quiet").ResourceVersion; rv != quietRV {
		t.Errorf("team-a/quiet was rewritten on the target while unchanged (resourceVersion %s -> %s)", quietRV, rv)
	}

	if err := follow.Stop(); err != nil {
		t.Fatalf("leases copy --follow after SIGTERM: %v", err)
	}
	summary := follow.WaitLine(0, time.Second, "leases copy done")
	if !strings.Contains(summary, "deleted 1, errors 0") {
		t.Errorf("summary %q: want one delete and no errors", summary)
	}
}

// TestFollowForEnds: --for ends a mirror by itself, with exit 0.
func TestFollowForEnds(t *testing.T) {
	src, dst := startPair(t)
	create(t, src.Client, nodeLease("node-1", time.Now()))
	start := time.Now()
	out, code := runCopy(t, "--follow", "--for", "3s", "--from-kubeconfig", src.Kubeconfig, "--to-kubeconfig", dst.Kubeconfig, "-n", "kube-node-lease")
	if code != 0 || !strings.Contains(out, "copied 1, updated 0, unchanged 0, target newer 0, deleted 0, errors 0") {
		t.Fatalf("exit %d, want 0 and one lease copied:\n%s", code, out)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("--for 3s took %v", took)
	}
}

// TestCopyUsageErrors: usage errors exit 2, an unreachable source exits 1,
// each with a message naming the problem.
func TestCopyUsageErrors(t *testing.T) {
	kc := writeUnreachableKubeconfig(t)
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--to-kubeconfig", kc}, 2, "--from-kubeconfig is required"},
		{[]string{"--from-kubeconfig", kc}, 2, "must specify exactly one of --to-kubeconfig or --to-etcd-servers"},
		{[]string{"--from-kubeconfig", kc, "--to-kubeconfig", kc, "--to-etcd-servers", "http://127.0.0.1:1"}, 2, "must specify exactly one"},
		{[]string{"--from-kubeconfig", kc, "--to-kubeconfig", kc, "--for", "1m"}, 2, "--for can only be used with --follow"},
		{[]string{"--from-kubeconfig", kc, "--to-kubeconfig", kc, "--etcd-prefix", "/x"}, 2, "--etcd-prefix can only be used with --to-etcd-servers"},
		{[]string{"--from-kubeconfig", kc, "--to-kubeconfig", kc}, 1, "listing leases on the source"},
	} {
		out, code := runCopy(t, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.msg) {
			t.Errorf("leases copy %v: exit %d, output %q; want exit %d and %q", tc.args, code, out, tc.code, tc.msg)
		}
	}
}
