package robustness

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The fencing demonstration: three `leasehold elect` run this test binary
// as a writer (runWriter), which sends its LEASEHOLD_FENCING_TOKEN with
// every write to a resource served by the test (fencedResource). The
// resource refuses a token smaller than the last one it accepted, as a
// program's own resource should.

// writerEnvURL names the resource's URL for the writer mode of the test
// binary.
const writerEnvURL = "LEASEHOLD_ROBUSTNESS_WRITER_URL"

// writerPeriod is how often a writer writes.
const writerPeriod = 20 * time.Millisecond

// Elector timings: short, to make a pause past the lease quick.
const (
	fenceLeaseDuration = 2 * time.Second
	fenceRenewDeadline = 1500 * time.Millisecond
	fenceRetryPeriod   = 500 * time.Millisecond
	fenceGracePeriod   = time.Second
)

// runWriter is the command under election: it writes every writerPeriod
// until SIGTERM, or until its elector is gone (it was reparented), or for
// ten minutes at most, so that it never outlives the test.
func runWriter() int {
	target := os.Getenv(writerEnvURL)
	token := os.Getenv("LEASEHOLD_FENCING_TOKEN")
	identity := os.Getenv("LEASEHOLD_IDENTITY")
	ppid := os.Getppid()
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	hc := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(writerPeriod)
	defer tick.Stop()
	deadline := time.After(10 * time.Minute)
	for seq := 0; ; seq++ {
		select {
		case <-term:
			return 0
		case <-deadline:
			return 1
		case <-tick.C:
		}
		if os.Getppid() != ppid {
			return 2
		}
		q := url.Values{"token": {token}, "identity": {identity}, "pid": {strconv.Itoa(os.Getpid())}, "ppid": {strconv.Itoa(ppid)}, "seq": {strconv.Itoa(seq)}}
		resp, err := hc.Post(target+"?"+q.Encode(), "text/plain", nil)
		if err == nil {
			_ = resp.Body.Close()
		}
	}
}

// write is one write the resource received.
type write struct {
	at       time.Time
	token    int64
	identity string
	pid      int
	ppid     int
	accepted bool
}

// fencedResource is the shared resource: it accepts a write whose token
// is at least the last accepted one and refuses the others (409).
type fencedResource struct {
	mu     sync.Mutex
	last   int64
	writes []write
}

func (r *fencedResource) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	token, err := strconv.ParseInt(q.Get("token"), 10, 64)
	pid, _ := strconv.Atoi(q.Get("pid"))
	ppid, _ := strconv.Atoi(q.Get("ppid"))
	if err != nil {
		http.Error(w, "bad token", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	wr := write{at: time.Now(), token: token, identity: q.Get("identity"), pid: pid, ppid: ppid, accepted: len(r.writes) == 0 || token >= r.last}
	if wr.accepted {
		r.last = token
	}
	r.writes = append(r.writes, wr)
	r.mu.Unlock()
	if !wr.accepted {
		http.Error(w, "stale fencing token", http.StatusConflict)
	}
}

func (r *fencedResource) snapshot() []write {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]write(nil), r.writes...)
}

// lastAccepted is the latest accepted write.
func (r *fencedResource) lastAccepted() (write, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.writes) - 1; i >= 0; i-- {
		if r.writes[i].accepted {
			return r.writes[i], true
		}
	}
	return write{}, false
}

// electorSlot keeps one candidate running: an elector exits after losing
// leadership, and the slot starts a new one (with a new identity), as a
// supervisor would.
type electorSlot struct {
	t    *testing.T
	n    int
	bin  string // the leasehold binary
	args func(identity string) []string
	env  []string
	dir  string
	// failpoints: bin is a failpoint build; each elector serves gofail's
	// endpoint on a port of its own (gofail).
	failpoints bool

	mu     sync.Mutex
	gen    int
	gofail string
	cmd    *exec.Cmd
	pids   map[int]bool // every elector pid this slot started
	exits  []string
}

func (s *electorSlot) run(ctx context.Context) {
	for ctx.Err() == nil {
		s.mu.Lock()
		s.gen++
		identity := fmt.Sprintf("e%d-%d", s.n, s.gen)
		out, err := os.Create(filepath.Join(s.dir, identity+".out"))
		if err != nil {
			s.mu.Unlock()
			s.t.Errorf("elector output: %v", err)
			return
		}
		cmd := exec.Command(s.bin, s.args(identity)...)
		cmd.Env, cmd.Stdout, cmd.Stderr = s.env, out, out
		if s.failpoints {
			s.gofail = net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(s.t)))
			cmd.Env = append(append([]string(nil), s.env...), "GOFAIL_HTTP="+s.gofail)
		}
		err = cmd.Start()
		_ = out.Close()
		if err != nil {
			s.mu.Unlock()
			s.t.Errorf("start elector: %v", err)
			return
		}
		s.cmd = cmd
		s.pids[cmd.Process.Pid] = true
		s.mu.Unlock()
		done := make(chan struct{})
		// Owned by this loop iteration: ends when the elector exits, which
		// the loop waits for below.
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			// Resume (it may be paused) and stop it; it stops its command.
			_ = cmd.Process.Signal(syscall.SIGCONT)
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				s.t.Errorf("elector %s did not stop within 10s of SIGTERM; killing it", identity)
				_ = cmd.Process.Kill()
				<-done
			}
		}
		s.mu.Lock()
		s.exits = append(s.exits, fmt.Sprintf("%s: %v", identity, cmd.ProcessState))
		s.mu.Unlock()
		sleep(ctx, 100*time.Millisecond)
	}
}

// fenceRound sizes a fencing run.
type fenceRound struct {
	Pauses             int
	MinPause, MaxPause time.Duration
	// ClockFaults skew a follower's clock (failpointLeasehold's
	// electorClockJump or electorClockRate) while the leader's elector is
	// paused for less than its lease, which alone never deposes it.
	// The run stops making them once EnoughEarly of them made a follower
	// take over early (0: never): whether one does depends on when the
	// follower polls (every 0.5 to 1.1 s), so it takes a few tries.
	// FailpointBinary is the failpoint build they need.
	ClockFaults, EnoughEarly int
	FailpointBinary          string
}

var smallFence = fenceRound{Pauses: 6, MinPause: time.Second, MaxPause: 6 * time.Second, ClockFaults: 12, EnoughEarly: 2}

// soakFence is one round of the long run (a few minutes); rounds repeat.
var soakFence = fenceRound{Pauses: 20, MinPause: 500 * time.Millisecond, MaxPause: 10 * time.Second, ClockFaults: 10}

// Clock faults: a jump to clockJump ahead (2.5 leases), or a clock running
// clockRate times as fast, on a follower, while the leader's elector is
// stopped for clockPause: shorter than the lease less two retry periods, so
// that a follower with a true clock never takes over, and longer than one
// retry period, so that a skewed one sees the record unchanged long enough.
const (
	clockJump     = 5 * time.Second
	clockRate     = 8
	clockMinPause = 800 * time.Millisecond
	clockMaxPause = 1200 * time.Millisecond
	clockArmAfter = 100 * time.Millisecond
)

// TestFencing pauses the leader again and again and checks that the
// resource never accepted a deposed leader's write after its successor's.
func TestFencing(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of elections and pauses; not in -short")
	}
	size := smallFence
	size.FailpointBinary = failpointLeasehold(t)
	st := runFencing(t, seed(t), size)
	t.Log(st)
}

// fenceStats is what a fencing run covered.
type fenceStats struct {
	Pauses, PausesWithCommand, Takeovers int
	Accepted, Refused                    int
	// StaleRefused: writes of a deposed leader's command made after its
	// successor's first accepted write (every one must be refused).
	StaleRefused int
	// ClockFaults, EarlyTakeovers: skewed follower clocks, and how many
	// of them made that follower take over from a leader paused for less
	// than its lease; StaleRefusedClock: StaleRefused for those.
	ClockFaults, EarlyTakeovers, StaleRefusedClock int
	Leaders                                        int
	MaxStaleAfterResume                            time.Duration
	Violations                                     int
}

func (f fenceStats) String() string {
	return fmt.Sprintf("%d pauses of the leader (%d with its command), %d taken over; %d skewed follower clocks, %d early takeovers by them, %d stale writes refused after those; %d leaders; %d writes accepted, %d refused, of which %d by deposed leaders after their successor's first write; a resumed deposed leader's command wrote for at most %v after SIGCONT; violations %d",
		f.Pauses, f.PausesWithCommand, f.Takeovers, f.ClockFaults, f.EarlyTakeovers, f.StaleRefusedClock, f.Leaders, f.Accepted, f.Refused, f.StaleRefused, f.MaxStaleAfterResume.Round(time.Millisecond), f.Violations)
}

func (f *fenceStats) add(o fenceStats) {
	f.Pauses += o.Pauses
	f.PausesWithCommand += o.PausesWithCommand
	f.Takeovers += o.Takeovers
	f.Leaders += o.Leaders
	f.Accepted += o.Accepted
	f.Refused += o.Refused
	f.StaleRefused += o.StaleRefused
	f.ClockFaults += o.ClockFaults
	f.EarlyTakeovers += o.EarlyTakeovers
	f.StaleRefusedClock += o.StaleRefusedClock
	f.MaxStaleAfterResume = max(f.MaxStaleAfterResume, o.MaxStaleAfterResume)
	f.Violations += o.Violations
}

func runFencing(t *testing.T, seed int64, size fenceRound) fenceStats {
	rng := rand.New(rand.NewSource(seed + 3000))
	srv := startServer(t)
	res := &fencedResource{}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: res, ReadHeaderTimeout: 5 * time.Second}
	serveDone := make(chan struct{})
	go func() { defer close(serveDone); _ = hs.Serve(l) }()
	defer func() {
		_ = hs.Close()
		<-serveDone
	}()

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	lease := fmt.Sprintf("kube-system/fence-%d", seed)
	env := append(os.Environ(), writerEnvURL+"=http://"+l.Addr().String()+"/write")
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var slots []*electorSlot
	for n := range 3 {
		s := &electorSlot{t: t, n: n, bin: leaseholdBinary, env: env, dir: dir, pids: map[int]bool{}, args: func(identity string) []string {
			return []string{"elect", "--kubeconfig", srv.kubeconfig(), "--lease", lease, "--identity", identity,
				"--lease-duration", fenceLeaseDuration.String(), "--renew-deadline", fenceRenewDeadline.String(),
				"--retry-period", fenceRetryPeriod.String(), "--grace-period", fenceGracePeriod.String(), "--", self}
		}}
		if size.FailpointBinary != "" {
			s.bin, s.failpoints = size.FailpointBinary, true
		}
		slots = append(slots, s)
		wg.Add(1)
		go func() { defer wg.Done(); s.run(ctx) }()
	}
	stopAll := func() {
		cancel()
		wg.Wait()
	}
	defer stopAll()
	electorOf := func(pid int) bool {
		for _, s := range slots {
			s.mu.Lock()
			ok := s.pids[pid]
			s.mu.Unlock()
			if ok {
				return true
			}
		}
		return false
	}

	// steadyLeader waits for a leader that writes, lets it write a
	// little, and returns its latest accepted write.
	steadyLeader := func() (write, bool) {
		if _, ok := waitLeader(res, 30*time.Second, time.Now()); !ok {
			t.Errorf("no leader wrote within 30s")
			return write{}, false
		}
		sleep(ctx, 200*time.Millisecond+time.Duration(rng.Intn(500))*time.Millisecond)
		leader, _ := res.lastAccepted()
		if !electorOf(leader.ppid) {
			t.Errorf("the writer %d's parent %d is none of the electors", leader.pid, leader.ppid)
			return write{}, false
		}
		return leader, true
	}

	var st fenceStats
	type pauseRecord struct {
		leader         write
		from, resumed  time.Time
		d              time.Duration
		withCommand    bool
		takenOver      bool
		successorToken int64
		// clock: a clock fault, the follower's elector pid skewed.
		clock  string
		skewed int
	}
	var pauses []pauseRecord
	for range size.Pauses {
		leader, ok := steadyLeader()
		if !ok {
			break
		}
		p := pauseRecord{leader: leader, withCommand: rng.Intn(2) == 0,
			d: size.MinPause + time.Duration(rng.Int63n(int64(size.MaxPause-size.MinPause)))}
		p.from = time.Now()
		_ = syscall.Kill(leader.ppid, syscall.SIGSTOP)
		if p.withCommand {
			_ = syscall.Kill(leader.pid, syscall.SIGSTOP)
		}
		time.Sleep(p.d)
		if next, ok := res.lastAccepted(); ok && next.token > leader.token {
			p.takenOver, p.successorToken = true, next.token
		}
		p.resumed = time.Now()
		_ = syscall.Kill(leader.ppid, syscall.SIGCONT)
		if p.withCommand {
			_ = syscall.Kill(leader.pid, syscall.SIGCONT)
		}
		pauses = append(pauses, p)
		st.Pauses++
		if p.withCommand {
			st.PausesWithCommand++
		}
		if p.takenOver {
			st.Takeovers++
		}
		// Let the resumed leader notice (or keep leading after a short pause).
		sleep(ctx, fenceLeaseDuration)
	}
	for i := range size.ClockFaults {
		if size.EnoughEarly > 0 && st.EarlyTakeovers >= size.EnoughEarly {
			break
		}
		if size.FailpointBinary == "" {
			t.Fatalf("clock faults need a failpoint build (FailpointBinary)")
		}
		leader, ok := steadyLeader()
		if !ok {
			break
		}
		var followers []*electorSlot
		for _, s := range slots {
			s.mu.Lock()
			if s.cmd != nil && s.cmd.Process.Pid != leader.ppid {
				followers = append(followers, s)
			}
			s.mu.Unlock()
		}
		if len(followers) == 0 {
			t.Errorf("clock fault: no follower running")
			break
		}
		f := followers[rng.Intn(len(followers))]
		f.mu.Lock()
		skewed, addr := f.cmd.Process.Pid, f.gofail
		f.mu.Unlock()
		fp, term := "electorClockJump", fmt.Sprintf("return(%d)", clockJump.Milliseconds())
		if i%2 == 1 {
			fp, term = "electorClockRate", fmt.Sprintf("return(%d)", clockRate)
		}
		p := pauseRecord{leader: leader, clock: fp + "=" + term, skewed: skewed,
			d: clockMinPause + time.Duration(rng.Int63n(int64(clockMaxPause-clockMinPause)))}
		p.from = time.Now()
		_ = syscall.Kill(leader.ppid, syscall.SIGSTOP)
		// Skewed once the leader stopped renewing: a jump before it would
		// be spent on a poll that sees a renewal (client-go restarts its
		// count at every change of the record).
		time.Sleep(clockArmAfter)
		if err := setFailpoint(addr, fp, term); err != nil {
			// It may have just exited (a deposed leader restarting).
			t.Logf("clock fault on elector %d not armed: %v", skewed, err)
		}
		time.Sleep(p.d - clockArmAfter)
		p.resumed = time.Now()
		_ = syscall.Kill(leader.ppid, syscall.SIGCONT)
		sleep(ctx, fenceLeaseDuration)
		if fp == "electorClockRate" {
			// The follower may have become leader, or exited.
			_ = setFailpoint(addr, fp, "")
		}
		if next, ok := res.lastAccepted(); ok && next.token > leader.token {
			p.takenOver, p.successorToken = true, next.token
			for _, w := range res.snapshot() {
				if w.accepted && w.token > leader.token {
					if w.ppid == skewed {
						st.EarlyTakeovers++
					}
					break
				}
			}
		}
		pauses = append(pauses, p)
		st.ClockFaults++
	}
	stopAll()

	writes := res.snapshot()
	var v []string
	// Accepted writes: tokens never go down (the resource's rule), a
	// token belongs to one command, and commands never interleave.
	tokenOwner := map[int64]int{}
	finished := map[int]bool{}
	prevPid := 0
	for _, w := range writes {
		if !w.accepted {
			st.Refused++
			continue
		}
		st.Accepted++
		if o, ok := tokenOwner[w.token]; ok && o != w.pid {
			v = append(v, fmt.Sprintf("token %d accepted from two commands, pids %d and %d", w.token, o, w.pid))
		}
		tokenOwner[w.token] = w.pid
		if w.pid != prevPid {
			if finished[w.pid] {
				v = append(v, fmt.Sprintf("command %d (%s, token %d) wrote again after another command's accepted write: interleaved", w.pid, w.identity, w.token))
			}
			finished[prevPid] = true
			prevPid = w.pid
		}
	}
	st.Leaders = len(tokenOwner)
	// For each pause that was taken over: every write of the deposed
	// command after its successor's first accepted write was refused, and
	// how long after SIGCONT it went on trying.
	for _, p := range pauses {
		if !p.takenOver {
			continue
		}
		var successorAt time.Time
		for _, w := range writes {
			if w.accepted && w.token > p.leader.token {
				successorAt = w.at
				break
			}
		}
		for _, w := range writes {
			if w.pid != p.leader.pid || w.at.Before(successorAt) {
				continue
			}
			switch {
			case w.accepted:
				v = append(v, fmt.Sprintf("deposed leader %s (token %d) had a write accepted after its successor's", w.identity, w.token))
			case p.clock != "":
				st.StaleRefusedClock++
			default:
				st.StaleRefused++
			}
			if d := w.at.Sub(p.resumed); d > st.MaxStaleAfterResume {
				st.MaxStaleAfterResume = d
			}
		}
	}
	if st.Takeovers == 0 && size.Pauses >= 3 {
		v = append(v, "no pause was taken over: the run showed nothing")
	}
	if st.EarlyTakeovers == 0 && size.ClockFaults >= 3 {
		v = append(v, "no skewed clock made its elector take over early: the clock faults showed nothing")
	}
	st.Violations = len(v)
	if len(v) > 0 {
		var b strings.Builder
		for _, w := range writes {
			fmt.Fprintf(&b, "%s token=%d %s pid=%d accepted=%v\n", w.at.Format("15:04:05.000"), w.token, w.identity, w.pid, w.accepted)
		}
		path := filepath.Join(os.TempDir(), fmt.Sprintf("leasehold-fencing-%d.log", time.Now().UnixNano()))
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Errorf("writing %s: %v", path, err)
		}
		t.Errorf("seed %d: fencing violations (every write in %s):\n  %s", seed, path, strings.Join(v, "\n  "))
	}
	// Every command this run started is gone: its elector stopped it, or
	// it ended itself when its elector was gone.
	killStrayWriters(t, writes)
	return st
}

// waitLeader waits for an accepted write after since.
func waitLeader(res *fencedResource, timeout time.Duration, since time.Time) (write, bool) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if w, ok := res.lastAccepted(); ok && w.at.After(since) {
			return w, true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return write{}, false
}

// killStrayWriters kills, by pid, a writer still running after every
// elector stopped (none should), and says so.
func killStrayWriters(t *testing.T, writes []write) {
	seen := map[int]bool{}
	for _, w := range writes {
		if seen[w.pid] {
			continue
		}
		seen[w.pid] = true
		// A writer is our child's child: check it is still a writer of
		// ours before signalling the pid.
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", w.pid))
		if err != nil || !strings.Contains(string(b), writerEnvURL+"=") {
			continue
		}
		if err := syscall.Kill(w.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			t.Errorf("kill stray writer %d: %v", w.pid, err)
		}
		t.Errorf("writer %d (%s) outlived its elector", w.pid, w.identity)
	}
}
