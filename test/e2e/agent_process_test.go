package e2e

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// agentStopTimeout bounds a graceful agent stop before SIGKILL.
const agentStopTimeout = 20 * time.Second

// agentProc is one running `leasehold agent` process. Its stderr (the
// agent's log) is collected so tests can look for the lines the kubelet
// would log.
type agentProc struct {
	Node string

	t      testing.TB
	args   []string
	cmd    *exec.Cmd
	logs   *syncBuffer
	exited chan struct{}
	// exitErr is written before exited is closed and read only after.
	exitErr error

	mu      sync.Mutex
	stopped bool
	paused  bool
}

// startAgent runs `leasehold agent --node node --kubeconfig kubeconfig` plus
// extraArgs. The process is stopped when the test ends (resumed first if
// the test left it SIGSTOPped); its log is printed if the test failed.
func startAgent(t testing.TB, node, kubeconfig string, extraArgs ...string) *agentProc {
	t.Helper()
	args := append([]string{"agent", "--node", node, "--kubeconfig", kubeconfig, "--v", "4"}, extraArgs...)
	a := &agentProc{Node: node, t: t, args: args}
	a.start()
	t.Cleanup(func() {
		a.Stop()
		if t.Failed() {
			t.Logf("agent %s log:\n%s", node, a.Logs())
		}
	})
	return a
}

func (a *agentProc) start() {
	a.t.Helper()
	cmd := exec.Command(leaseholdBinary, a.args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		a.t.Fatalf("agent stderr pipe: %v", err)
	}
	if err := cmd.Start(); err != nil {
		a.t.Fatalf("starting agent %s: %v", a.Node, err)
	}
	a.cmd, a.logs, a.exited = cmd, &syncBuffer{}, make(chan struct{})
	a.stopped, a.paused = false, false
	logs, exited := a.logs, a.exited
	// Owned by the process: it ends when the process exits (stderr EOF),
	// which Stop and Kill wait for.
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			logs.writeLine(sc.Bytes())
		}
		a.exitErr = cmd.Wait()
		close(exited)
	}()
}

// Restart starts the agent again with the same arguments after Stop or
// Kill; the log starts afresh.
func (a *agentProc) Restart() {
	a.t.Helper()
	a.mu.Lock()
	stopped := a.stopped
	a.mu.Unlock()
	if !stopped {
		a.t.Fatalf("agent %s restarted while running", a.Node)
	}
	a.start()
}

// Stop sends SIGTERM (after SIGCONT if paused) and waits for exit status 0,
// the agent's promise on SIGTERM. After agentStopTimeout it is killed.
// Stop is idempotent.
func (a *agentProc) Stop() {
	a.t.Helper()
	paused, ok := a.markStopped()
	if !ok {
		return
	}
	if paused {
		a.signal(syscall.SIGCONT)
	}
	a.signal(syscall.SIGTERM)
	timer := time.NewTimer(agentStopTimeout)
	defer timer.Stop()
	select {
	case <-a.exited:
		if a.exitErr != nil {
			a.t.Errorf("agent %s exited after SIGTERM with %v", a.Node, a.exitErr)
		}
	case <-timer.C:
		a.t.Errorf("agent %s did not exit within %v of SIGTERM; killing it", a.Node, agentStopTimeout)
		_ = a.cmd.Process.Kill()
		<-a.exited
	}
}

// Kill sends SIGKILL (a crash) and waits for the process to be gone.
func (a *agentProc) Kill() {
	a.t.Helper()
	if _, ok := a.markStopped(); !ok {
		return
	}
	a.signal(syscall.SIGKILL)
	<-a.exited
}

// Pause freezes the agent with SIGSTOP: it keeps its connections but sends
// nothing, like a hung kubelet or a node cut off from the network.
func (a *agentProc) Pause() {
	a.t.Helper()
	a.mu.Lock()
	a.paused = true
	a.mu.Unlock()
	a.signal(syscall.SIGSTOP)
}

// Resume continues a paused agent with SIGCONT.
func (a *agentProc) Resume() {
	a.t.Helper()
	a.mu.Lock()
	a.paused = false
	a.mu.Unlock()
	a.signal(syscall.SIGCONT)
}

// Running reports whether the process has not exited.
func (a *agentProc) Running() bool {
	select {
	case <-a.exited:
		return false
	default:
		return true
	}
}

// Logs returns what the current process has logged so far.
func (a *agentProc) Logs() string { return a.logs.String() }

// LogMark is a position in the current log, so a test can look only at
// what was logged after some event.
func (a *agentProc) LogMark() int { return len(a.Logs()) }

// WaitLog waits until the agent logs a line containing every one of parts
// after mark, and returns that line.
func (a *agentProc) WaitLog(mark int, timeout time.Duration, parts ...string) string {
	a.t.Helper()
	var found string
	testdeps.Eventually(a.t, timeout, 200*time.Millisecond, "agent "+a.Node+" logs "+strings.Join(parts, " ... "), func() error {
		for line := range strings.Lines(a.Logs()[mark:]) {
			if containsAll(line, parts) {
				found = line
				return nil
			}
		}
		if !a.Running() {
			return errors.New("agent exited")
		}
		return errors.New("not logged yet")
	})
	return found
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func (a *agentProc) signal(sig os.Signal) {
	a.t.Helper()
	if err := a.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		a.t.Errorf("%v to agent %s: %v", sig, a.Node, err)
	}
}

func (a *agentProc) markStopped() (paused, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return false, false
	}
	a.stopped = true
	paused, a.paused = a.paused, false
	return paused, true
}
