package e2e

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// More leader-election end-to-end tests, on the elect harness (shared log
// of who ran when): an unmodified client-go program competing with
// `leasehold elect`; the server killed with -9 and restarted mid-election;
// coordinated leader election (KEP-4355) with the server's controller.

// buildLecli compiles the client-go-only election program into dir.
func buildLecli(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lecli")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/leasehold/leasehold/test/e2e/internal/lecli")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build lecli: %v\n%s", err, out)
	}
	return bin
}

// startLecli runs the client-go program with the harness's timings.
func (h *electHarness) startLecli(bin, identity string) *elector {
	h.t.Helper()
	return h.startProcess(identity, bin, "--kubeconfig", h.kubeconfig, "--lease", h.lease, "--identity", identity,
		"--lease-duration", electLeaseDuration.String(), "--renew-deadline", electRenewDeadline.String(),
		"--retry-period", electRetryPeriod.String())
}

// kill sends SIGKILL to a competitor and waits for it.
func (h *electHarness) kill(identity string) {
	h.t.Helper()
	e := h.electors[identity]
	if err := e.cmd.Process.Kill(); err != nil {
		h.t.Fatal(err)
	}
	<-e.done
	delete(h.electors, identity)
}

// waitLeaderOtherThan waits for a start line after `after` (monotonic)
// by an identity not in exclude.
func (h *electHarness) waitLeaderOtherThan(after time.Duration, exclude ...string) electLine {
	h.t.Helper()
	deadline := time.Now().Add(electWait)
	for time.Now().Before(deadline) {
		for _, l := range h.lines() {
			if l.kind == "start" && l.at > after && !slices.Contains(exclude, l.identity) {
				return l
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.t.Fatalf("no leader other than %v started within %v", exclude, electWait)
	return electLine{}
}

// checkOneAtATime verifies mutual exclusion in the shared log: ordered by
// time, each run of a leader (start, beats, maybe stop) is contiguous, and
// nobody writes while another's run is under way. Leaders may come back
// (a same identity restarted), but never interleave.
func (h *electHarness) checkOneAtATime() []string {
	t := h.t
	lines := h.lines()
	slices.SortStableFunc(lines, func(a, b electLine) int { return int(a.at - b.at) })
	var order []string
	ended := map[int]bool{} // pids whose run another leader followed
	cur := -1
	for _, l := range lines {
		if l.pid == cur {
			continue
		}
		if ended[l.pid] {
			t.Errorf("%s (pid %d) wrote %q at %v after another leader had started", l.identity, l.pid, l.kind, l.at)
			continue
		}
		if l.kind != "start" {
			t.Errorf("%s (pid %d) wrote %q at %v without a start", l.identity, l.pid, l.kind, l.at)
		}
		if cur != -1 {
			ended[cur] = true
		}
		cur = l.pid
		order = append(order, l.identity)
	}
	return order
}

// leaseNow reads the harness's Lease.
func (h *electHarness) leaseNow() *coordinationv1.Lease {
	h.t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", h.kubeconfig)
	if err != nil {
		h.t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	ns, name, _ := strings.Cut(h.lease, "/")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := c.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatalf("get lease %s: %v", h.lease, err)
	}
	return l
}

func holderIdentity(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func TestElectWithClientGoProgram(t *testing.T) {
	lecli := buildLecli(t)
	h := newElectHarness(t)

	// The client-go program leads first, alone; then two electors join.
	h.startLecli(lecli, "clientgo-1")
	first := h.waitLeaderOtherThan(-1)
	if first.identity != "clientgo-1" {
		t.Fatalf("first leader %s, want clientgo-1", first.identity)
	}
	h.start("elect-1")
	h.start("elect-2")
	time.Sleep(electLeaseDuration) // both electors observe the held lease

	// kill -9 the client-go leader: an elector takes over.
	killedAt := electUptime(t)
	h.kill("clientgo-1")
	next := h.waitLeaderOtherThan(killedAt, "clientgo-1")
	t.Logf("clientgo-1 -> %s after %v", next.identity, next.at-killedAt)
	if d := next.at - killedAt; d > electFailoverBound {
		t.Errorf("failover took %v, more than %v", d, electFailoverBound)
	}

	// A new client-go program joins; kill -9 the elector leading: the
	// other elector or the client-go program takes over.
	h.startLecli(lecli, "clientgo-2")
	time.Sleep(electLeaseDuration)
	killedAt = electUptime(t)
	h.kill(next.identity)
	third := h.waitLeaderOtherThan(killedAt, next.identity)
	t.Logf("%s -> %s after %v", next.identity, third.identity, third.at-killedAt)

	// And once more, leaving one competitor.
	time.Sleep(500 * time.Millisecond)
	killedAt = electUptime(t)
	h.kill(third.identity)
	last := h.waitLeaderOtherThan(killedAt, third.identity)
	t.Logf("%s -> %s after %v", third.identity, last.identity, last.at-killedAt)

	time.Sleep(500 * time.Millisecond)
	order := h.checkOneAtATime()
	t.Logf("leaders in order: %v", order)
	if len(order) != 4 {
		t.Errorf("%d leadership runs, want 4 (one per kill plus the first)", len(order))
	}
	l := h.leaseNow()
	if got := holderIdentity(l); got != last.identity {
		t.Errorf("lease holder %q, want the running leader %q", got, last.identity)
	}
	if tr := l.Spec.LeaseTransitions; tr == nil || *tr < 3 {
		t.Errorf("leaseTransitions %v, want at least 3 after three takeovers", tr)
	}
}

func TestElectServerKilledAndRestarted(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	srv := startServerIn(t, dataDir)
	_, port, err := net.SplitHostPort(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	h := newElectHarnessOn(t, srv.Kubeconfig)
	for i := range 3 {
		h.start(fmt.Sprintf("elector-%d", i))
	}
	leader := h.waitStart(-1)
	time.Sleep(time.Second)

	// Two outages: one shorter than the renew deadline (the leader may
	// keep the lease) and one longer (it must lose it cleanly).
	for round, down := range []time.Duration{time.Second, electRenewDeadline + time.Second} {
		srv.Kill()
		killedAt := electUptime(t)
		time.Sleep(down)
		// Same data dir and port: the kubeconfig the electors use stays valid.
		srv = startServerIn(t, dataDir, "--secure-port", port)
		restartedAt := electUptime(t)

		// Within a lease duration plus slack after the restart, someone
		// leads: either the old leader kept beating or a new one started.
		deadline := time.Now().Add(electFailoverBound + electLeaseDuration)
		var now string
		for time.Now().Before(deadline) {
			lines := h.lines()
			recent := slices.DeleteFunc(lines, func(l electLine) bool { return l.at < restartedAt+electLeaseDuration })
			if len(recent) > 0 {
				now = recent[len(recent)-1].identity
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if now == "" {
			t.Fatalf("round %d: nobody leads %v after the restart", round, electFailoverBound+2*electLeaseDuration)
		}
		kept := now == leader.identity
		t.Logf("round %d: server down %v (restarted %v after kill); %s -> %s (kept: %v)",
			round, down, restartedAt-killedAt, leader.identity, now, kept)
		if !kept {
			if code := h.wait(h.electors[leader.identity]); code != 75 {
				t.Errorf("round %d: old leader %s exited with %d, want 75 (leadership lost)", round, leader.identity, code)
			}
			delete(h.electors, leader.identity)
			h.start(fmt.Sprintf("elector-r%d", round)) // keep three competitors
			for _, l := range h.lines() {
				if l.identity == now && l.kind == "start" {
					leader = l
				}
			}
		}
	}
	time.Sleep(500 * time.Millisecond)
	order := h.checkOneAtATime()
	t.Logf("leaders in order: %v", order)
	if got := holderIdentity(h.leaseNow()); got != leader.identity {
		t.Errorf("lease holder %q, want the running leader %q", got, leader.identity)
	}
}

func TestElectCoordinated(t *testing.T) {
	// Always our own server: the election controller is what is tested.
	srv := startServer(t)
	h := newElectHarnessOn(t, srv.Kubeconfig)
	coordinated := func(identity, emulation string) *elector {
		return h.startWith(identity, "--coordinated", "--binary-version", "1.33.0", "--emulation-version", emulation)
	}
	coordinated("emu-1.31", "1.31.0")
	coordinated("emu-1.32", "1.32.0")
	coordinated("emu-1.30", "1.30.0")

	// The first election may run before all three registered; an earlier
	// winner is then asked to hand over, so the oldest ends up leading.
	waitFor := func(identity string, within time.Duration) electLine {
		t.Helper()
		deadline := time.Now().Add(within)
		for time.Now().Before(deadline) {
			for _, l := range h.lines() {
				if l.kind == "start" && l.identity == identity {
					return l
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("%s did not lead within %v", identity, within)
		return electLine{}
	}
	oldest := waitFor("emu-1.30", 30*time.Second)
	t.Logf("emu-1.30 leads with token %d", oldest.token)
	time.Sleep(time.Second)
	l := h.leaseNow()
	if got := holderIdentity(l); got != "emu-1.30" {
		t.Errorf("lease holder %q, want emu-1.30", got)
	}
	if s := l.Spec.Strategy; s == nil || *s != coordinationv1.OldestEmulationVersion {
		t.Errorf("lease strategy %v, want OldestEmulationVersion", s)
	}

	// A better candidate appears: preferredHolder hand-over.
	appearedAt := electUptime(t)
	coordinated("emu-1.29", "1.29.0")
	better := waitFor("emu-1.29", 30*time.Second)
	t.Logf("hand-over emu-1.30 -> emu-1.29 took %v; token %d -> %d", better.at-appearedAt, oldest.token, better.token)
	if better.token <= oldest.token {
		t.Errorf("token did not increase across the hand-over: %d -> %d", oldest.token, better.token)
	}
	if code := h.wait(h.electors["emu-1.30"]); code != 75 {
		t.Errorf("handing-over elector exited with %d, want 75", code)
	}
	delete(h.electors, "emu-1.30")
	time.Sleep(time.Second)
	l = h.leaseNow()
	if got := holderIdentity(l); got != "emu-1.29" {
		t.Errorf("lease holder %q after the hand-over, want emu-1.29", got)
	}
	if p := l.Spec.PreferredHolder; p != nil {
		t.Errorf("preferredHolder %q left after the hand-over", *p)
	}
	order := h.checkOneAtATime()
	t.Logf("leaders in order: %v", order)
	if order[len(order)-1] != "emu-1.29" {
		t.Errorf("last leader %s, want emu-1.29", order[len(order)-1])
	}

	// The departed elector withdrew its LeaseCandidate.
	cfg, err := clientcmd.BuildConfigFromFlags("", h.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns, _, _ := strings.Cut(h.lease, "/")
	if _, err := c.CoordinationV1beta1().LeaseCandidates(ns).Get(context.Background(), "emu-1.30", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("LeaseCandidate of the departed elector: err %v, want NotFound", err)
	}
	if _, err := c.CoordinationV1beta1().LeaseCandidates(ns).Get(context.Background(), "emu-1.29", metav1.GetOptions{}); err != nil {
		t.Errorf("LeaseCandidate of the leader: %v", err)
	}
}
