package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// snapAck is one acknowledged write of a lease: the resourceVersion the
// server answered and the holder written.
type snapAck struct {
	rv     int64
	holder string
}

// snapshotLedger records every acknowledged lease write, per lease in order.
type snapshotLedger struct {
	mu     sync.Mutex
	writes map[string][]snapAck
}

func (l *snapshotLedger) record(lease *coordinationv1.Lease) error {
	rv, err := strconv.ParseInt(lease.ResourceVersion, 10, 64)
	if err != nil {
		return fmt.Errorf("lease %s: resourceVersion %q: %w", lease.Name, lease.ResourceVersion, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.writes == nil {
		l.writes = make(map[string][]snapAck)
	}
	l.writes[lease.Name] = append(l.writes[lease.Name], snapAck{rv: rv, holder: *lease.Spec.HolderIdentity})
	return nil
}

// at is each lease's state at revision rev: its last acknowledged write at
// or before rev (leases first written after rev are absent).
func (l *snapshotLedger) at(rev int64) map[string]snapAck {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]snapAck)
	for name, ws := range l.writes {
		for _, w := range ws {
			if w.rv <= rev {
				out[name] = w
			}
		}
	}
	return out
}

// leaseWriters creates (or takes over) and renews leases in ns through
// cs, each writer its own leases one after another, recording every
// acknowledged write, until stop is called. stop lets each writer finish
// the write it is making, so every write that reached the store is
// recorded; it may be called more than once.
func leaseWriters(t *testing.T, cs kubernetes.Interface, ns string, writers, leasesEach int, l *snapshotLedger) (stop func()) {
	t.Helper()
	stopping := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			leases := make([]*coordinationv1.Lease, leasesEach)
			for i := 0; ; i++ {
				select {
				case <-stopping:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				err := writeLease(ctx, cs, ns, fmt.Sprintf("snap-w%d-%d", w, i%leasesEach), fmt.Sprintf("holder-%d", i), &leases[i%leasesEach], l)
				cancel()
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		}()
	}
	var once sync.Once
	return func() {
		once.Do(func() { close(stopping) })
		wg.Wait()
	}
}

// writeLease sets the holder of lease name, creating it or reading it
// first when *last is nil, and records the acknowledged write.
func writeLease(ctx context.Context, cs kubernetes.Interface, ns, name, holder string, last **coordinationv1.Lease, l *snapshotLedger) error {
	leases := cs.CoordinationV1().Leases(ns)
	if *last == nil {
		got, err := leases.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			got, err = leases.Create(ctx, &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
			}, metav1.CreateOptions{})
			if err == nil {
				*last = got
				return l.record(got)
			}
		}
		if err != nil {
			return err
		}
		*last = got
	}
	next := (*last).DeepCopy()
	next.Spec.HolderIdentity = &holder
	got, err := leases.Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	*last = got
	return l.record(got)
}

// checkLeases fails t unless ns holds exactly want: the same leases, each
// with the same resourceVersion and holder.
func checkLeases(t *testing.T, cs kubernetes.Interface, ns string, want map[string]snapAck) {
	t.Helper()
	list, err := cs.CoordinationV1().Leases(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list leases: %v", err)
	}
	got := make(map[string]snapAck)
	for _, l := range list.Items {
		rv, _ := strconv.ParseInt(l.ResourceVersion, 10, 64)
		got[l.Name] = snapAck{rv: rv, holder: *l.Spec.HolderIdentity}
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || g != w {
			t.Errorf("lease %s: restored %+v (present %v), acknowledged at the snapshot %+v", name, g, ok, w)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("lease %s restored, but it was not written by the snapshot's revision", name)
		}
	}
	if len(want) == 0 {
		t.Fatal("nothing to compare: no lease was written before the snapshot")
	}
}

// checkOldResourceVersion checks what a client holding rv, from before the
// snapshot, gets from the restored server: 410 Expired for a list at
// exactly rv and for a watch from rv, as after a compaction.
func checkOldResourceVersion(t *testing.T, cs kubernetes.Interface, ns string, rv int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := cs.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{
		ResourceVersion: strconv.FormatInt(rv, 10), ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Errorf("list at the old resourceVersion %d: %v, want 410 Expired", rv, err)
	}
	w, err := cs.CoordinationV1().Leases(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(rv, 10)})
	if err != nil {
		if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			t.Errorf("watch from the old resourceVersion %d: %v, want 410 Expired", rv, err)
		}
		return
	}
	defer w.Stop()
	select {
	case ev, ok := <-w.ResultChan():
		st, isStatus := ev.Object.(*metav1.Status)
		if !ok || ev.Type != watch.Error || !isStatus || st.Code != 410 {
			t.Errorf("watch from the old resourceVersion %d: first event %v %+v, want an ERROR with a 410 Status", rv, ev.Type, ev.Object)
		}
	case <-ctx.Done():
		t.Errorf("watch from the old resourceVersion %d: no event", rv)
	}
}

var snapshotRevisionRE = regexp.MustCompile(`at revision (\d+)`)

// tryLeasehold runs the binary with args and returns its output and
// error, for commands expected to fail.
func tryLeasehold(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, leaseholdBinary, args...).CombinedOutput()
	return string(out), err
}

// snapshotRevision is the revision `leasehold snapshot save|restore` printed.
func snapshotRevision(t *testing.T, out string) int64 {
	t.Helper()
	m := snapshotRevisionRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no revision in %q", out)
	}
	rev, _ := strconv.ParseInt(m[1], 10, 64)
	return rev
}

// etcdFromSnapshot restores the etcd snapshot database db with Debian's
// etcdctl into a one-member cluster, starts Debian's etcd on it (stopped at
// cleanup) and returns its client URL.
func etcdFromSnapshot(t *testing.T, db string) string {
	t.Helper()
	etcdBin := testdeps.Debian(t, "etcd-server", "etcd")
	etcdctl := testdeps.Debian(t, "etcd-client", "etcdctl")
	dir := filepath.Join(t.TempDir(), "etcd")
	client := fmt.Sprintf("http://127.0.0.1:%d", testdeps.FreePort(t))
	peer := fmt.Sprintf("http://127.0.0.1:%d", testdeps.FreePort(t))
	cluster := "m1=" + peer
	restore := exec.Command(etcdctl, "snapshot", "restore", db, "--data-dir", dir, "--name", "m1",
		"--initial-cluster", cluster, "--initial-advertise-peer-urls", peer)
	restore.Env = append(os.Environ(), "ETCDCTL_API=3")
	if out, err := restore.CombinedOutput(); err != nil {
		t.Fatalf("etcdctl snapshot restore: %v\n%s", err, out)
	}
	logFile, err := os.Create(filepath.Join(t.TempDir(), "etcd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close() // the process has its own descriptor
	logs := func() string { b, _ := os.ReadFile(logFile.Name()); return string(b) }
	cmd := exec.Command(etcdBin, "--name", "m1", "--data-dir", dir,
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", cluster)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting etcd: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("etcd log:\n%s", logs())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		health := exec.Command(etcdctl, "--endpoints", client, "--command-timeout", "2s", "endpoint", "health")
		health.Env = append(os.Environ(), "ETCDCTL_API=3")
		out, err := health.CombinedOutput()
		if err == nil {
			return client
		}
		select {
		case <-exited:
			t.Fatalf("etcd exited while starting; log:\n%s", logs())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd not healthy within 30s: %v %s; log:\n%s", err, out, logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// kubectlLeaseRVs lists ns's leases with the newest kubectl on the
// machine: name -> resourceVersion.
func kubectlLeaseRVs(t *testing.T, srv *serverProc, ns string) map[string]string {
	t.Helper()
	bins := kubectlBinaries(t)
	for len(bins) > 1 && bins[len(bins)-1].Path == "" {
		bins = bins[:len(bins)-1]
	}
	k := newKubectl(t, bins[len(bins)-1], srv)
	out := k.run("get", "leases", "-n", ns, "--no-headers", "-o", "custom-columns=NAME:.metadata.name,RV:.metadata.resourceVersion")
	rvs := make(map[string]string)
	for _, row := range tableRows(out) {
		if len(row) == 2 {
			rvs[row[0]] = row[1]
		}
	}
	return rvs
}
