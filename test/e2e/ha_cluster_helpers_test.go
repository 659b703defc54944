package e2e

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/leasehold/leasehold/internal/testdeps"
	"github.com/leasehold/leasehold/internal/testdeps/nodeenv"
)

// haCluster is a control plane as an operator runs it on one machine: a
// 3-member etcd cluster, `serve` replicas sharing one CA (`credentials
// init` + `--ca-dir`), and haproxy in front of them; clients use the
// balancer's address only.
type haCluster struct {
	t      *testing.T
	etcd   *testdeps.EtcdCluster
	pkiDir string
	prefix string
	// replicas in start order; a restarted replica keeps its entry.
	replicas []*haReplica
	lb       *haproxyProc
	// lbKubeconfig is the admin kubeconfig with the balancer as server.
	lbKubeconfig string
	// lb is a client-go client through the balancer.
	lbClient kubernetes.Interface
}

// haReplica is one replica: its current process and those it had before
// restarts (their logs count its leadership terms).
type haReplica struct {
	*replica
	dataDir string
	port    string
	past    []*serverProc
}

// haServerArgs are every replica's flags besides the store and its name:
// short election timings (as TestReplicasRunControllersOnOneReplica) and
// the node lifecycle timings of the node scenarios.
func haServerArgs() []string {
	args := []string{
		"--leader-elect-lease-duration", replicaLeaseDuration.String(),
		"--leader-elect-renew-deadline", replicaRenewDeadline.String(),
		"--leader-elect-retry-period", replicaRetryPeriod.String(),
		"--identity-lease-duration-seconds", fmt.Sprint(int(replicaIdentityLease / time.Second)),
		"--identity-lease-renew-interval-seconds", "1",
		"--identity-lease-gc-period", "1s",
	}
	return append(args, fastServerArgs...)
}

// newHACluster starts etcd, makes the shared trust, and starts replica-0;
// it waits until replica-0 runs both controllers (so the first leader is
// known) before the others start, then puts haproxy in front of them all.
func newHACluster(t *testing.T, replicas int) *haCluster {
	t.Helper()
	c := &haCluster{t: t, prefix: "/" + strings.ToLower(t.Name()) + "/registry"}
	c.etcd = testdeps.StartEtcdCluster(t, 3)
	c.pkiDir = filepath.Join(t.TempDir(), "pki")
	if out, err := exec.Command(leaseholdBinary, "credentials", "init", "--dir", c.pkiDir).CombinedOutput(); err != nil {
		t.Fatalf("credentials init: %v\n%s", err, out)
	}
	for i := range replicas {
		c.startReplica(fmt.Sprintf("replica-%d", i))
		if i == 0 {
			rs := c.live()
			waitHolder(t, rs[0], controllerManager, rs, 2*replicaLeaseDuration)
			waitHolder(t, rs[0], electionController, rs, 2*replicaLeaseDuration)
		}
	}
	backends := map[string]string{}
	for _, r := range c.replicas {
		backends[r.name] = r.proc.Addr
	}
	c.lb = startHAProxy(t, filepath.Join(c.pkiDir, "ca.crt"), backends)
	c.lb.WaitStates(c.states("UP"), haproxyFollow)

	// The admin kubeconfig of any replica works on all (one CA); pointed
	// at the balancer, it is what every client of the test uses.
	cfg, err := clientcmd.LoadFromFile(c.replicas[0].proc.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range cfg.Clusters {
		cl.Server = "https://" + c.lb.Addr
	}
	c.lbKubeconfig = filepath.Join(t.TempDir(), "lb.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, c.lbKubeconfig); err != nil {
		t.Fatal(err)
	}
	c.lbClient = c.client(c.lbKubeconfig)
	return c
}

// client is a client-go client of kubeconfig with its own connections,
// closed when the test ends (nodeenv).
func (c *haCluster) client(kubeconfig string) kubernetes.Interface {
	c.t.Helper()
	return nodeenv.New(c.t, kubeconfig, "leasehold-e2e-ha").Client
}

// startReplica starts a new replica on a fresh data dir and free port.
func (c *haCluster) startReplica(name string) *haReplica {
	c.t.Helper()
	r := &haReplica{replica: &replica{name: name}, dataDir: filepath.Join(c.t.TempDir(), "data")}
	c.run(r, "0")
	_, port, err := net.SplitHostPort(r.proc.Addr)
	if err != nil {
		c.t.Fatal(err)
	}
	r.port = port
	c.replicas = append(c.replicas, r)
	return r
}

// run starts r's process on port.
func (c *haCluster) run(r *haReplica, port string) {
	c.t.Helper()
	args := append([]string{"--etcd-servers", c.etcd.Endpoints(), "--etcd-prefix", c.prefix,
		"--hostname-override", r.name, "--ca-dir", c.pkiDir, "--secure-port", port}, haServerArgs()...)
	r.proc = startServerIn(c.t, r.dataDir, args...)
	r.cs = c.client(r.proc.Kubeconfig)
}

// restart starts a stopped or killed replica again on its data dir and
// port, so the balancer's configuration still names it.
func (c *haCluster) restart(r *haReplica) {
	c.t.Helper()
	if r.proc.Running() {
		c.t.Fatalf("%s restarted while running", r.name)
	}
	r.past = append(r.past, r.proc)
	c.run(r, r.port)
}

// live is the replicas whose process runs, as *replica for the election
// helpers of replicas_test.go.
func (c *haCluster) live() []*replica {
	var out []*replica
	for _, r := range c.replicas {
		if r.proc != nil && r.proc.Running() {
			out = append(out, r.replica)
		}
	}
	return out
}

// states is every replica in one balancer state.
func (c *haCluster) states(state string) map[string]string {
	m := map[string]string{}
	for _, r := range c.replicas {
		m[r.name] = state
	}
	return m
}

// controllerTerms counts the controller-manager leadership terms begun on
// every replica process so far: the node lifecycle controller registers
// each node once per term, as kube-controller-manager's does on each start.
func (c *haCluster) controllerTerms() int {
	n := 0
	for _, r := range c.replicas {
		for _, p := range append(slices.Clone(r.past), r.proc) {
			n += len(electionEvents(&replica{name: r.name, proc: p}, controllerManager, "became leader; starting controllers"))
		}
	}
	return n
}

// ackWriter writes leases through the balancer without pause and keeps a
// ledger of every write the server acknowledged. Failures are expected
// while the control plane is disrupted: it counts them and tries again
// from a fresh read, so what it checks is that no acknowledged write is
// lost, never that all writes succeed.
type ackWriter struct {
	cs     kubernetes.Interface
	ledger snapshotLedger
	stop   chan struct{}
	done   chan struct{}

	mu       sync.Mutex
	acks     []time.Time
	failures []writeFailure
	lastErr  error
}

// writeFailure is one failed write: when it ended, after how long, and why.
type writeFailure struct {
	at   time.Time
	took time.Duration
	err  error
}

func (f writeFailure) String() string {
	return fmt.Sprintf("after %v: %v", f.took.Round(time.Millisecond), f.err)
}

// ackWriterLeases is how many leases the writer cycles through: each write
// either creates one or updates it with a higher holder number.
const ackWriterLeases = 20

func startAckWriter(t *testing.T, cs kubernetes.Interface) *ackWriter {
	t.Helper()
	w := &ackWriter{cs: cs, stop: make(chan struct{}), done: make(chan struct{})}
	// Owned by the writer: Stop (also run by the cleanup) ends it.
	go w.run()
	t.Cleanup(w.Stop)
	return w
}

func (w *ackWriter) run() {
	defer close(w.done)
	last := make([]*coordinationv1.Lease, ackWriterLeases)
	for i := 0; ; i++ {
		select {
		case <-w.stop:
			return
		default:
		}
		k := i % ackWriterLeases
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		err := writeLease(ctx, w.cs, durabilityNamespace, fmt.Sprintf("ha-ack-%d", k), fmt.Sprintf("holder-%d", i), &last[k], &w.ledger)
		cancel()
		w.mu.Lock()
		if err != nil {
			w.failures = append(w.failures, writeFailure{at: time.Now(), took: time.Since(start), err: err})
			w.lastErr = err
			last[k] = nil // read it again: the write may have landed
		} else {
			w.acks = append(w.acks, time.Now())
		}
		w.mu.Unlock()
		if err != nil {
			select {
			case <-w.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		} else {
			time.Sleep(20 * time.Millisecond) // tens of writes a second: load, not a flood
		}
	}
}

// Stop ends the writer after the write it is making; idempotent.
func (w *ackWriter) Stop() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// acked is how many writes were acknowledged, and the time of the last.
func (w *ackWriter) acked() (int, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.acks) == 0 {
		return 0, time.Time{}
	}
	return len(w.acks), w.acks[len(w.acks)-1]
}

// longestGap is the longest time without an acknowledged write in
// [from, to]: how long the writer could not write.
func (w *ackWriter) longestGap(from, to time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	prev, gap := from, time.Duration(0)
	for _, a := range w.acks {
		if a.Before(from) || a.After(to) {
			continue
		}
		gap = max(gap, a.Sub(prev))
		prev = a
	}
	return max(gap, to.Sub(prev))
}

// failuresSince is the failed writes that ended after from.
func (w *ackWriter) failuresSince(from time.Time) []writeFailure {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []writeFailure
	for _, f := range w.failures {
		if f.at.After(from) {
			out = append(out, f)
		}
	}
	return out
}

// waitAcks waits until the writer has n more acknowledged writes than now.
func (w *ackWriter) waitAcks(t *testing.T, n int, within time.Duration) time.Duration {
	t.Helper()
	base, _ := w.acked()
	took, err := waitFor(within, func() (bool, error) {
		got, _ := w.acked()
		w.mu.Lock()
		defer w.mu.Unlock()
		return got >= base+n, w.lastErr
	})
	if err != nil {
		t.Fatalf("the writer through the balancer made fewer than %d writes in %v: %v", n, within, err)
	}
	return took
}

// check stops the writer and verifies that every lease holds its last
// acknowledged write or a later one (a write whose answer was lost may
// have landed): holder numbers only grow, as do resourceVersions.
func (w *ackWriter) check(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	w.Stop()
	list, err := cs.CoordinationV1().Leases(durabilityNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list leases: %v", err)
	}
	stored := map[string]*coordinationv1.Lease{}
	for i := range list.Items {
		stored[list.Items[i].Name] = &list.Items[i]
	}
	holderNumber := func(h string) int {
		n, err := strconv.Atoi(strings.TrimPrefix(h, "holder-"))
		if err != nil {
			t.Fatalf("holder %q", h)
		}
		return n
	}
	w.ledger.mu.Lock()
	defer w.ledger.mu.Unlock()
	total := 0
	for name, acks := range w.ledger.writes {
		total += len(acks)
		lastAck := acks[len(acks)-1]
		l := stored[name]
		if l == nil {
			t.Errorf("lease %s is gone; its last acknowledged write was %+v", name, lastAck)
			continue
		}
		rv, _ := strconv.ParseInt(l.ResourceVersion, 10, 64)
		if rv < lastAck.rv || holderNumber(*l.Spec.HolderIdentity) < holderNumber(lastAck.holder) ||
			(rv == lastAck.rv && *l.Spec.HolderIdentity != lastAck.holder) {
			t.Errorf("lease %s holds %s at resourceVersion %d; acknowledged was %s at %d: an acknowledged write is lost",
				name, *l.Spec.HolderIdentity, rv, lastAck.holder, lastAck.rv)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("writer through the balancer: %d acknowledged writes, all present; %d failed attempts (last: %v)", total, len(w.failures), w.lastErr)
	if total == 0 {
		t.Fatal("the writer made no acknowledged write")
	}
}
