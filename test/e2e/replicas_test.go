package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/internal/storage/etcd/etcdtest"
	"github.com/leasehold/leasehold/internal/testdeps"
)

// Replicas' election timings in these tests: short, so that a failover
// fits a fast test, and long enough apart that a hand-over on SIGTERM
// (about a retry period) is told from one by expiry (a lease duration).
const (
	replicaLeaseDuration = 6 * time.Second
	replicaRenewDeadline = 4 * time.Second
	replicaRetryPeriod   = 500 * time.Millisecond
	// replicaIdentityLease is --identity-lease-duration-seconds.
	replicaIdentityLease = 3 * time.Second
	controllerManager    = "leasehold-controller-manager"
	electionController   = "leader-election-controller"
)

// replica is one `serve` process of a replicated control plane.
type replica struct {
	name string // --hostname-override
	proc *serverProc
	cs   kubernetes.Interface
}

// startReplica starts a `serve` replica on the shared etcd, with its own
// data dir (its own CA and admin kubeconfig: each test client talks to one
// replica) and hostname.
func startReplica(t *testing.T, etcd, prefix, name string) *replica {
	t.Helper()
	p := startServer(t,
		"--etcd-servers", etcd, "--etcd-prefix", prefix,
		"--hostname-override", name,
		"--leader-elect-lease-duration", replicaLeaseDuration.String(),
		"--leader-elect-renew-deadline", replicaRenewDeadline.String(),
		"--leader-elect-retry-period", replicaRetryPeriod.String(),
		"--identity-lease-duration-seconds", fmt.Sprint(int(replicaIdentityLease/time.Second)),
		"--identity-lease-renew-interval-seconds", "1",
		"--identity-lease-gc-period", "1s",
		"--node-monitor-period", "1s",
	)
	_, cs := adminClient(t, p)
	return &replica{name: name, proc: p, cs: cs}
}

// holderOf is the replica whose election identity (<hostname>_<uuid>)
// holds kube-system/lease, as read through via; nil if none of rs.
func holderOf(t *testing.T, via *replica, lease string, rs []*replica) *replica {
	t.Helper()
	l, err := via.cs.CoordinationV1().Leases(metav1.NamespaceSystem).Get(context.Background(), lease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return nil
	}
	for _, r := range rs {
		if strings.HasPrefix(*l.Spec.HolderIdentity, r.name+"_") {
			return r
		}
	}
	return nil
}

// waitHolder waits until one of candidates holds lease and returns it with
// the time that took.
func waitHolder(t *testing.T, via *replica, lease string, candidates []*replica, within time.Duration) (*replica, time.Duration) {
	t.Helper()
	var h *replica
	took, err := waitFor(within, func() (bool, error) {
		h = holderOf(t, via, lease, candidates)
		return h != nil, nil
	})
	if err != nil {
		t.Fatalf("no replica of %v holds %s: %v", replicaNames(candidates), lease, err)
	}
	return h, took
}

func replicaNames(rs []*replica) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.name)
	}
	return out
}

// electionLog is a leader-election line of a replica's JSON log.
type electionLog struct {
	Time   time.Time `json:"time"`
	Msg    string    `json:"msg"`
	Lease  string    `json:"lease"`
	Reason string    `json:"reason"`
}

// electionEvents returns the replica's log lines with message msg about
// kube-system/lease.
func electionEvents(r *replica, lease, msg string) []electionLog {
	var out []electionLog
	sc := bufio.NewScanner(strings.NewReader(r.proc.Output()))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		var l electionLog
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == msg && l.Lease == "kube-system/"+lease {
			out = append(out, l)
		}
	}
	return out
}

// registeredNodeEvents counts the RegisteredNode events of node and the
// occurrences they record.
func registeredNodeEvents(t *testing.T, cs kubernetes.Interface, node string) (events, count int) {
	t.Helper()
	list, err := cs.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list events: %v", err)
	}
	for _, e := range list.Items {
		if e.Reason == "RegisteredNode" && e.InvolvedObject.Name == node {
			events++
			count += int(max(e.Count, 1))
		}
	}
	return events, count
}

// TestReplicasRunControllersOnOneReplica runs three `serve` replicas on one
// etcd: exactly one runs the controllers (one RegisteredNode event for a
// node, not one per replica), each publishes its own identity lease; a
// kill -9 of the leader hands the controllers to another replica within the
// lease duration and its identity lease is collected once expired; a
// SIGTERM hands them over at once, after the old leader's controllers
// stopped.
func TestReplicasRunControllersOnOneReplica(t *testing.T) {
	etcd := etcdtest.Start(t, etcdtest.Options{}).Endpoint
	prefix := "/" + strings.ToLower(t.Name()) + "/registry"
	var rs []*replica
	for i := range 3 {
		rs = append(rs, startReplica(t, etcd, prefix, fmt.Sprintf("replica-%d", i)))
	}
	leader, _ := waitHolder(t, rs[0], controllerManager, rs, 2*replicaLeaseDuration)
	waitHolder(t, rs[0], electionController, rs, 2*replicaLeaseDuration)

	// One identity lease per replica, named after its hostname.
	var ids map[string]string // hostname -> lease name
	if _, err := waitFor(10*time.Second, func() (bool, error) {
		list, err := rs[1].cs.CoordinationV1().Leases(metav1.NamespaceSystem).List(context.Background(),
			metav1.ListOptions{LabelSelector: "apiserver.kubernetes.io/identity=kube-apiserver"})
		if err != nil {
			return false, err
		}
		ids = map[string]string{}
		for _, l := range list.Items {
			ids[l.Labels["kubernetes.io/hostname"]] = l.Name
		}
		return len(list.Items) == 3 && len(ids) == 3, fmt.Errorf("identity leases by hostname: %v", ids)
	}); err != nil {
		t.Fatalf("want 3 identity leases of replica-0..2: %v", err)
	}

	// A node registered through any replica is seen by the node lifecycle
	// controller of the leader only: one RegisteredNode event.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "replicated-node"}}
	if _, err := rs[2].cs.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node: %v", err)
	}
	if _, err := waitFor(15*time.Second, func() (bool, error) {
		n, _ := registeredNodeEvents(t, rs[0].cs, node.Name)
		return n > 0, nil
	}); err != nil {
		t.Fatalf("no RegisteredNode event: %v", err)
	}
	time.Sleep(3 * time.Second) // several monitor passes of every replica
	if n, count := registeredNodeEvents(t, rs[1].cs, node.Name); n != 1 || count != 1 {
		t.Fatalf("%d RegisteredNode events (%d occurrences) for one node, want exactly 1", n, count)
	}
	for _, r := range rs {
		if got := len(electionEvents(r, controllerManager, "became leader; starting controllers")); (r == leader) != (got == 1) {
			t.Errorf("%s (leader: %s) started the controllers %d times", r.name, leader.name, got)
		}
	}

	// kill -9 the leader: another replica takes over within the lease
	// duration (plus the acquire loop's jittered retry period).
	var rest []*replica
	for _, r := range rs {
		if r != leader {
			rest = append(rest, r)
		}
	}
	killedAt := time.Now()
	leader.proc.Kill()
	next, took := waitHolder(t, rest[0], controllerManager, rest, replicaLeaseDuration+3*replicaRetryPeriod+3*time.Second)
	t.Logf("kill -9 %s: %s leads after %v (lease duration %v)", leader.name, next.name, took, replicaLeaseDuration)
	if _, err := waitFor(5*time.Second, func() (bool, error) {
		return holderOf(t, rest[0], electionController, rest) != nil, nil
	}); err != nil {
		t.Errorf("the election controller's lease is not held by a live replica: %v", err)
	}
	// The dead replica's identity lease is collected once expired.
	deadID := ids[leader.name]
	if _, err := waitFor(replicaIdentityLease+10*time.Second, func() (bool, error) {
		_, err := rest[0].cs.CoordinationV1().Leases(metav1.NamespaceSystem).Get(context.Background(), deadID, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	}); err != nil {
		t.Errorf("identity lease %s of killed %s: %v", deadID, leader.name, err)
	}
	// Renewed at most a renew interval (1 s) before the kill, it could
	// not expire earlier than this.
	if after := time.Since(killedAt); after < replicaIdentityLease-time.Second {
		t.Errorf("identity lease of %s collected %v after the kill, before it expired", leader.name, after)
	} else {
		t.Logf("identity lease of %s collected within %v of the kill", leader.name, after)
	}
	for _, r := range rest {
		if _, err := r.cs.CoordinationV1().Leases(metav1.NamespaceSystem).Get(context.Background(), ids[r.name], metav1.GetOptions{}); err != nil {
			t.Errorf("live %s's identity lease: %v", r.name, err)
		}
	}

	// SIGTERM the new leader: it stops its controllers, then releases the
	// lease, and the last replica takes over well within a lease duration.
	last := rest[0]
	if next == last {
		last = rest[1]
	}
	termAt := time.Now()
	next.proc.Signal(syscall.SIGTERM)
	_, took = waitHolder(t, last, controllerManager, []*replica{last}, replicaLeaseDuration)
	t.Logf("SIGTERM %s: %s leads after %v", next.name, last.name, took)
	if took >= replicaLeaseDuration/2 {
		t.Errorf("hand-over on SIGTERM took %v, want well under the lease duration %v (a release)", took, replicaLeaseDuration)
	}
	select {
	case <-next.proc.Exited():
	case <-time.After(testdeps.ServeStopTimeout):
		t.Fatalf("%s did not exit after SIGTERM", next.name)
	}
	next.proc.Forget()
	if next.proc.ExitErr() != nil {
		t.Errorf("%s exited with %v after SIGTERM", next.name, next.proc.ExitErr())
	}
	// The old leader's controllers had stopped before the new one's began.
	stoppedLeading := electionEvents(next, controllerManager, "stopped leading; controllers stopped")
	began := electionEvents(last, controllerManager, "became leader; starting controllers")
	if len(stoppedLeading) != 1 || len(began) != 1 {
		t.Fatalf("%s stopped leading %d times, %s began %d times; want 1 and 1", next.name, len(stoppedLeading), last.name, len(began))
	}
	if !stoppedLeading[0].Time.Before(began[0].Time) {
		t.Errorf("%s's controllers stopped at %v, after %s's started at %v", next.name, stoppedLeading[0].Time, last.name, began[0].Time)
	}
	t.Logf("SIGTERM at %v; %s's controllers stopped at +%v; %s's started at +%v", termAt.Format(time.TimeOnly),
		next.name, stoppedLeading[0].Time.Sub(termAt), last.name, began[0].Time.Sub(termAt))
}

// TestReplicaThatLosesTheLeaseStopsItsControllers freezes the leader
// (SIGSTOP) past the lease duration: another replica takes over, and when
// the frozen one resumes it stops its controllers on its first read of the
// lease, keeps serving, and campaigns again instead of exiting.
func TestReplicaThatLosesTheLeaseStopsItsControllers(t *testing.T) {
	etcd := etcdtest.Start(t, etcdtest.Options{}).Endpoint
	prefix := "/" + strings.ToLower(t.Name()) + "/registry"
	rs := []*replica{startReplica(t, etcd, prefix, "replica-a"), startReplica(t, etcd, prefix, "replica-b")}
	leader, _ := waitHolder(t, rs[0], controllerManager, rs, 2*replicaLeaseDuration)
	other := rs[0]
	if other == leader {
		other = rs[1]
	}
	leader.proc.Signal(syscall.SIGSTOP)
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			leader.proc.Signal(syscall.SIGCONT)
		}
	}
	defer resume()
	_, took := waitHolder(t, other, controllerManager, []*replica{other}, replicaLeaseDuration+3*replicaRetryPeriod+3*time.Second)
	t.Logf("%s frozen: %s leads after %v", leader.name, other.name, took)
	resume()
	resumedAt := time.Now()

	var stopped []electionLog
	if _, err := waitFor(replicaRenewDeadline+5*time.Second, func() (bool, error) {
		stopped = electionEvents(leader, controllerManager, "stopped leading; controllers stopped")
		return len(stopped) == 1, nil
	}); err != nil {
		t.Fatalf("%s did not stop its controllers after resuming: %v", leader.name, err)
	}
	t.Logf("%s stopped its controllers %v after resuming (reason %q)", leader.name, stopped[0].Time.Sub(resumedAt), stopped[0].Reason)
	if h := holderOf(t, other, controllerManager, rs); h != other {
		t.Fatalf("lease held by %v after %s resumed, want %s", h, leader.name, other.name)
	}
	if _, err := waitFor(5*time.Second, func() (bool, error) {
		return len(electionEvents(leader, controllerManager, "Attempting to acquire leader lease...")) >= 2, nil
	}); err != nil {
		t.Errorf("%s does not campaign again: %v", leader.name, err)
	}
	if !leader.proc.Running() {
		t.Fatalf("%s exited after losing the lease (its controllers stopped in time)", leader.name)
	}
	if _, err := leader.cs.CoordinationV1().Leases(metav1.NamespaceSystem).Get(context.Background(), controllerManager, metav1.GetOptions{}); err != nil {
		t.Errorf("%s no longer serves: %v", leader.name, err)
	}
}
