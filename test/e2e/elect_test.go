package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// The elect end-to-end test: five `leasehold elect` processes compete for one
// Lease on a real API server; their command appends to a shared log, so the
// log shows who ran when with which fencing token.
//
// It runs against the server whose kubeconfig is in LEASEHOLD_TEST_KUBECONFIG
// and is skipped (visibly) when that is unset.

const (
	electLeaseDuration = 4 * time.Second
	electRenewDeadline = 3 * time.Second
	electRetryPeriod   = time.Second
	electGracePeriod   = 2 * time.Second
	// electFailoverBound: a candidate waits a lease duration from its last
	// observation of the record, then acquires on its next jittered retry
	// (up to 2.2 retry periods later); the rest is for starting processes
	// on a loaded 2-core machine.
	electFailoverBound = electLeaseDuration + 22*electRetryPeriod/10 + 2*time.Second
	// electStaleMargin: after a frozen leader resumes, its command may still
	// write until its elector notices the lost lease (at most about one
	// retry period: the renew deadline has long passed) and the command
	// handles SIGTERM. Those are the writes fencing tokens exist to reject.
	electStaleMargin = electRetryPeriod + time.Second
	// electWait bounds every wait for a log line.
	electWait = 20 * time.Second
)

// electScript is the command under election: it logs start, a beat every
// 100 ms and stop (on SIGTERM) with a monotonic timestamp (/proc/uptime,
// 10 ms resolution, the same clock the test reads), identity, token, pid.
const electScript = `log() { read up _ < /proc/uptime; echo "$up $1 $LEASEHOLD_IDENTITY $LEASEHOLD_FENCING_TOKEN $$" >> "$ELECT_E2E_LOG"; }
trap 'log stop; exit 0' TERM
log start
while :; do log beat; sleep 0.1; done`

// electLine is one line of the shared log.
type electLine struct {
	at       time.Duration // monotonic
	kind     string        // start, beat, stop
	identity string
	token    int64
	pid      int
}

// electUptime reads the monotonic clock the script uses.
func electUptime(t *testing.T) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		t.Fatalf("read /proc/uptime: %v", err)
	}
	return electParseSeconds(t, strings.Fields(string(b))[0])
}

func electParseSeconds(t *testing.T, s string) time.Duration {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("bad time %q: %v", s, err)
	}
	return time.Duration(f * float64(time.Second))
}

// elector is one running `leasehold elect` process.
type elector struct {
	identity string
	cmd      *exec.Cmd
	out      string // file with its stdout and stderr
	done     chan struct{}
	code     int
}

type electHarness struct {
	t          *testing.T
	bin        string
	kubeconfig string
	lease      string // NS/NAME
	logPath    string
	dir        string
	electors   map[string]*elector
}

func newElectHarness(t *testing.T) *electHarness {
	t.Helper()
	kubeconfig := os.Getenv("LEASEHOLD_TEST_KUBECONFIG")
	if kubeconfig == "" {
		// No external server named: elect against a leasehold serve process.
		kubeconfig = startServer(t).Kubeconfig
	}
	return newElectHarnessOn(t, kubeconfig)
}

// newElectHarnessOn is newElectHarness against the server of kubeconfig.
func newElectHarnessOn(t *testing.T, kubeconfig string) *electHarness {
	t.Helper()
	dir := t.TempDir()
	bin := leaseholdBinary
	h := &electHarness{
		t: t, bin: bin, kubeconfig: kubeconfig, dir: dir,
		lease:    fmt.Sprintf("kube-system/elect-e2e-%d", time.Now().UnixNano()),
		logPath:  filepath.Join(dir, "shared.log"),
		electors: map[string]*elector{},
	}
	t.Cleanup(h.killAll)
	return h
}

// start runs an elector with identity; its output goes to a file.
func (h *electHarness) start(identity string) *elector {
	h.t.Helper()
	return h.startWith(identity)
}

// startWith is start with extra elect flags (before the command).
func (h *electHarness) startWith(identity string, extra ...string) *elector {
	h.t.Helper()
	return h.startVia(h.kubeconfig, identity, extra...)
}

// startVia is startWith through another kubeconfig (another server of
// the same cluster, such as one replica rather than the load balancer).
func (h *electHarness) startVia(kubeconfig, identity string, extra ...string) *elector {
	h.t.Helper()
	args := append([]string{"elect", "--kubeconfig", kubeconfig, "--lease", h.lease, "--identity", identity,
		"--lease-duration", electLeaseDuration.String(), "--renew-deadline", electRenewDeadline.String(),
		"--retry-period", electRetryPeriod.String(), "--grace-period", electGracePeriod.String()}, extra...)
	return h.startProcess(identity, h.bin, append(args, "--", "sh", "-c", electScript)...)
}

// startProcess runs any competitor (an elector, or a client-go program)
// that logs to the shared log; its output goes to a file.
func (h *electHarness) startProcess(identity, bin string, args ...string) *elector {
	h.t.Helper()
	out := filepath.Join(h.dir, fmt.Sprintf("%s-%d.out", identity, len(h.electors)))
	f, err := os.Create(out)
	if err != nil {
		h.t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "ELECT_E2E_LOG="+h.logPath)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		h.t.Fatalf("start elector %s: %v", identity, err)
	}
	e := &elector{identity: identity, cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		e.code = cmd.ProcessState.ExitCode()
		close(e.done)
	}()
	h.electors[identity] = e
	return e
}

// wait returns the elector's exit code, failing after electWait.
func (h *electHarness) wait(e *elector) int {
	h.t.Helper()
	select {
	case <-e.done:
		return e.code
	case <-time.After(electWait):
		h.t.Fatalf("elector %s did not exit", e.identity)
		return -1
	}
}

func (h *electHarness) killAll() {
	for _, e := range h.electors {
		_ = e.cmd.Process.Signal(syscall.SIGCONT)
		_ = e.cmd.Process.Kill()
		<-e.done
	}
	if h.t.Failed() {
		for id, e := range h.electors {
			b, _ := os.ReadFile(e.out)
			h.t.Logf("--- elector %s output:\n%s", id, b)
		}
		b, _ := os.ReadFile(h.logPath)
		h.t.Logf("--- shared log:\n%s", b)
	}
}

// lines parses the shared log.
func (h *electHarness) lines() []electLine {
	h.t.Helper()
	f, err := os.Open(h.logPath)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		h.t.Fatal(err)
	}
	defer f.Close()
	var out []electLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 5 {
			continue // a line being written right now
		}
		tok, err1 := strconv.ParseInt(fs[3], 10, 64)
		pid, err2 := strconv.Atoi(fs[4])
		if err1 != nil || err2 != nil {
			h.t.Fatalf("bad log line %q", sc.Text())
		}
		out = append(out, electLine{at: electParseSeconds(h.t, fs[0]), kind: fs[1], identity: fs[2], token: tok, pid: pid})
	}
	return out
}

// waitStart waits for a start line with a token above after and returns it.
func (h *electHarness) waitStart(after int64) electLine {
	h.t.Helper()
	deadline := time.Now().Add(electWait)
	for time.Now().Before(deadline) {
		for _, l := range h.lines() {
			if l.kind == "start" && l.token > after {
				return l
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.t.Fatalf("no leader started with a token above %d within %v", after, electWait)
	return electLine{}
}

func TestElectFailoverAndFencing(t *testing.T) {
	h := newElectHarness(t)
	next := 0
	newIdentity := func() string { next++; return fmt.Sprintf("elector-%d", next) }
	for range 5 {
		h.start(newIdentity())
	}
	leader := h.waitStart(-1)
	t.Logf("first leader %s token %d", leader.identity, leader.token)

	// kill -9 the leader, three times: another takes over within the bound.
	for round := range 3 {
		time.Sleep(500 * time.Millisecond) // let it beat
		killedAt := electUptime(t)
		e := h.electors[leader.identity]
		if err := e.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-e.done
		delete(h.electors, leader.identity)
		h.start(newIdentity()) // keep five candidates
		nextLeader := h.waitStart(leader.token)
		failover := nextLeader.at - killedAt
		t.Logf("kill round %d: %s (token %d) -> %s (token %d), failover %v (bound %v)",
			round, leader.identity, leader.token, nextLeader.identity, nextLeader.token, failover, electFailoverBound)
		if failover > electFailoverBound {
			t.Errorf("failover took %v, more than %v", failover, electFailoverBound)
		}
		leader = nextLeader
	}

	// A leader killed and restarted at once with the same identity finds
	// its own name in the lease and re-acquires at once (client-go keeps
	// leaseTransitions then); its token must still be new.
	time.Sleep(500 * time.Millisecond)
	e := h.electors[leader.identity]
	if err := e.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-e.done
	delete(h.electors, leader.identity)
	h.start(leader.identity)
	nextLeader := h.waitStart(leader.token)
	t.Logf("same-identity restart: %s token %d -> %s token %d", leader.identity, leader.token, nextLeader.identity, nextLeader.token)
	leader = nextLeader

	// Freeze the leader (elector and command, like a paused VM) beyond the
	// lease duration: another takes over; on resume the old one stops its
	// command within the stale margin and exits with code 75.
	time.Sleep(500 * time.Millisecond)
	frozen := h.electors[leader.identity]
	frozenPgid := leader.pid // the command is its own process group leader
	if err := syscall.Kill(frozen.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(-frozenPgid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozenAt := electUptime(t)
	nextLeader = h.waitStart(leader.token)
	t.Logf("freeze: %s (token %d) -> %s (token %d) after %v", leader.identity, leader.token, nextLeader.identity, nextLeader.token, nextLeader.at-frozenAt)
	if d := nextLeader.at - frozenAt; d > electFailoverBound {
		t.Errorf("takeover from a frozen leader took %v, more than %v", d, electFailoverBound)
	}
	time.Sleep(electLeaseDuration - (electUptime(t) - frozenAt) + time.Second)
	resumedAt := electUptime(t)
	_ = syscall.Kill(frozen.cmd.Process.Pid, syscall.SIGCONT)
	_ = syscall.Kill(-frozenPgid, syscall.SIGCONT)
	if code := h.wait(frozen); code != 75 {
		t.Errorf("resumed stale leader exited with %d, want 75 (leadership lost)", code)
	}
	exitedAt := electUptime(t)
	t.Logf("stale leader exited %v after resume", exitedAt-resumedAt)
	delete(h.electors, leader.identity)
	leader = nextLeader

	// Stop every elector: the leader stops its command, releases the lease,
	// and all exit 0.
	time.Sleep(500 * time.Millisecond)
	for _, e := range h.electors {
		if err := e.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for id, e := range h.electors {
		if code := h.wait(e); code != 0 {
			t.Errorf("elector %s exited with %d after SIGTERM, want 0", id, code)
		}
	}

	h.checkLog(leader.token, frozenPgid, resumedAt)
	h.checkReleased(leader.token)
}

// checkLog verifies the whole history: tokens strictly increase in start
// order; no command wrote after a newer token started, except the frozen
// one within electStaleMargin after its resume; every command started is
// accounted for.
func (h *electHarness) checkLog(lastToken int64, frozenPid int, resumedAt time.Duration) {
	t := h.t
	lines := h.lines()
	slices.SortStableFunc(lines, func(a, b electLine) int { return int(a.at - b.at) })
	var starts []electLine
	maxToken := int64(-1)
	var stale []electLine
	for _, l := range lines {
		if l.kind == "start" {
			starts = append(starts, l)
		}
		if l.token < maxToken {
			stale = append(stale, l)
		}
		maxToken = max(maxToken, l.token)
	}
	for i := 1; i < len(starts); i++ {
		if starts[i].token <= starts[i-1].token {
			t.Errorf("token did not increase: %s started with %d after %s with %d",
				starts[i].identity, starts[i].token, starts[i-1].identity, starts[i-1].token)
		}
	}
	if len(starts) != 6 {
		t.Errorf("%d leaders started, want 6 (first, 3 kills, same-identity restart, freeze)", len(starts))
	}
	if got := starts[len(starts)-1].token; got != lastToken {
		t.Errorf("last token in the log %d, want %d", got, lastToken)
	}
	var worst time.Duration
	for _, l := range stale {
		if l.pid != frozenPid {
			t.Errorf("stale write (token %d below %d) by %s at %v: only the frozen leader may write late", l.token, maxToken, l.identity, l.at)
			continue
		}
		if late := l.at - resumedAt; late > worst {
			worst = late
		}
	}
	t.Logf("%d stale writes by the resumed leader, the last %v after resume (margin %v)", len(stale), worst, electStaleMargin)
	if worst > electStaleMargin {
		t.Errorf("resumed stale leader kept writing for %v after resume, more than %v", worst, electStaleMargin)
	}
}

// checkReleased reads the lease: released (empty holder) with the last
// token as its transitions.
func (h *electHarness) checkReleased(lastToken int64) {
	t := h.t
	cfg, err := clientcmd.BuildConfigFromFlags("", h.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns, name, _ := strings.Cut(h.lease, "/")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lease, err := c.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get lease: %v", err)
	}
	// The values, not the pointers: when this fails under load, who holds
	// the lease and since when tells a late acquire by a stopping candidate
	// from a release that never came.
	if h := lease.Spec.HolderIdentity; h == nil || *h != "" {
		t.Errorf("lease not released: holder %q (nil: %v), acquired %v, renewed %v",
			ptr.Deref(h, ""), h == nil, lease.Spec.AcquireTime, lease.Spec.RenewTime)
	}
	if tr := lease.Spec.LeaseTransitions; tr == nil || int64(*tr) != lastToken {
		t.Errorf("leaseTransitions %d (nil: %v), want the last token %d", ptr.Deref(tr, 0), tr == nil, lastToken)
	}
	_ = c.CoordinationV1().Leases(ns).Delete(ctx, name, metav1.DeleteOptions{})
}
