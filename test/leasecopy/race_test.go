package leasecopy

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// TestEtcdCopyNeverGoesBackwards: while a --follow copy into etcd carries
// a stream of source renewals, a writer that reaches etcd directly (an
// etcd-backed server, as kube-apiserver would) renews the same lease too,
// both stamping the current time, so each is newer in turn. Whatever
// interleaving the copy's read-compare-write meets, the lease's renew time
// in etcd never moves backwards (every version etcd held is read from its
// watch): a copy that read an older version writes only if nothing was
// written since (its transaction compares the mod revision), and
// otherwise reads again. (With an unconditional put instead, this test
// failed in each of three runs, within etcd's first 20 versions.)
func TestEtcdCopyNeverGoesBackwards(t *testing.T) {
	endpoint := startEtcd(t)
	src := startServe(t)
	direct := startServe(t, "--etcd-servers", endpoint)
	create(t, src.Client, fullLease("team-a", "contested", time.Now().Truncate(time.Microsecond)))
	follow := startProc(t, "leases copy --follow", binary, "leases", "copy", "--follow", "--for", "2m", "-n", "team-a",
		"--from-kubeconfig", src.Kubeconfig, "--to-etcd-servers", endpoint)
	follow.WaitLine(0, time.Minute, "following the source's leases")
	waitFor(t, 5*time.Second, "the lease served from etcd", func() bool {
		return get(t, direct.Client, "team-a", "contested") != nil
	})

	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	history := watchRenewTimes(t, etcd, "/registry/leases/team-a/contested")

	contend(t, follow, src.Client, direct.Client)
	times := history()
	checkNeverOlder(t, follow, times, "in etcd")
}

// renewNow renews team-a/contested rounds times through c, stamping the
// current time, re-reading after a conflict as a kubelet does.
func renewNow(ctx context.Context, t *testing.T, c kubernetes.Interface, who string, rounds int) {
	leases := c.CoordinationV1().Leases("team-a")
	for i := 0; i < rounds; {
		l, err := leases.Get(ctx, "contested", metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s: %v", who, err)
			return
		}
		l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Truncate(time.Microsecond)}
		l.Annotations["example.com/note"] = fmt.Sprint(who, " ", i)
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		switch {
		case apierrors.IsConflict(err):
		case err != nil:
			t.Errorf("%s renewal %d: %v", who, i, err)
			return
		default:
			i++
		}
	}
}

// watchRenewTimes records the renew time of every version of key etcd
// stores from now on; the returned function ends the watch and returns
// them in revision order.
func watchRenewTimes(t *testing.T, etcd *clientv3.Client, key string) func() []time.Time {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	start, err := etcd.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	ch := etcd.Watch(ctx, key, clientv3.WithRev(start.Header.Revision))
	decode := scheme.Codecs.UniversalDeserializer()
	var (
		times []time.Time
		done  = make(chan struct{})
	)
	// Owned by the returned function, which cancels the watch and waits.
	go func() {
		defer close(done)
		for resp := range ch {
			for _, ev := range resp.Events {
				var l coordinationv1.Lease
				if _, _, err := decode.Decode(ev.Kv.Value, nil, &l); err != nil || l.Spec.RenewTime == nil {
					t.Errorf("version at revision %d: %v", ev.Kv.ModRevision, err)
					continue
				}
				times = append(times, l.Spec.RenewTime.Time)
			}
		}
	}()
	return func() []time.Time {
		cancel()
		<-done
		return times
	}
}

// TestAPICopyNeverGoesBackwards is TestEtcdCopyNeverGoesBackwards with an
// API target: a writer renewing the target's lease directly, against a
// --follow copy carrying the source's renewals, and every version the
// target's watch shows is at least as new as the one before.
func TestAPICopyNeverGoesBackwards(t *testing.T) {
	src, dst := startPair(t)
	create(t, src.Client, fullLease("team-a", "contested", time.Now().Truncate(time.Microsecond)))
	follow := startProc(t, "leases copy --follow", binary, "leases", "copy", "--follow", "--for", "2m", "-n", "team-a",
		"--from-kubeconfig", src.Kubeconfig, "--to-kubeconfig", dst.Kubeconfig)
	follow.WaitLine(0, time.Minute, "following the source's leases")
	start := get(t, dst.Client, "team-a", "contested")
	w, err := dst.Client.CoordinationV1().Leases("team-a").Watch(ctxFor(t, time.Minute), metav1.ListOptions{
		FieldSelector: "metadata.name=contested", ResourceVersion: start.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	var times []time.Time
	collected := make(chan struct{})
	// Owned by this test: it ends when the watch is stopped below.
	go func() {
		defer close(collected)
		for ev := range w.ResultChan() {
			if l, ok := ev.Object.(*coordinationv1.Lease); ok && l.Spec.RenewTime != nil {
				times = append(times, l.Spec.RenewTime.Time)
			}
		}
	}()

	contend(t, follow, src.Client, dst.Client)
	w.Stop()
	<-collected
	checkNeverOlder(t, follow, times, "on the target")
}

// contend renews team-a/contested 150 times through the source and as many
// straight on the target at once, then stops the follower once its last
// copies and their watch events are through.
func contend(t *testing.T, follow *testdeps.Process, src, dst kubernetes.Interface) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	const rounds = 150
	var wg sync.WaitGroup
	for _, c := range []struct {
		name string
		c    kubernetes.Interface
	}{{"source", src}, {"direct", dst}} {
		wg.Go(func() { renewNow(ctx, t, c.c, c.name, rounds) })
	}
	wg.Wait()
	time.Sleep(500 * time.Millisecond)
	if err := follow.Stop(); err != nil {
		t.Fatalf("leases copy --follow after SIGTERM: %v", err)
	}
}

// checkNeverOlder fails t if the renew times seen where (the target's
// versions in order) ever went backwards, or if the follower reported
// errors.
func checkNeverOlder(t *testing.T, follow *testdeps.Process, times []time.Time, where string) {
	t.Helper()
	for i := 1; i < len(times); i++ {
		if times[i].Before(times[i-1]) {
			t.Fatalf("the renew time %s went backwards at version %d of %d: %v after %v", where, i, len(times), times[i], times[i-1])
		}
	}
	summary := follow.WaitLine(0, time.Second, "leases copy done")
	if !strings.Contains(summary, "errors 0") {
		t.Errorf("summary %q: want no errors", summary)
	}
	t.Logf("%d versions %s, never older than the one before; %s", len(times), where, summary)
}
