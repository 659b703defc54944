package kubecluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// killWait bounds the wait for a process after SIGKILL. A process that
// survives it is stuck in the kernel; the harness reports it rather than
// hanging the test binary.
const killWait = 10 * time.Second

// errKilled is stop's report that the process had to be killed: worth a
// line in the test log, not a test failure.
var errKilled = errors.New("killed after ignoring SIGTERM")

// process is one control-plane process (etcd, kube-apiserver,
// kube-controller-manager) that can be stopped and started again with the
// same arguments. Its output is appended to one log file across restarts.
// The goroutine that waits for the process is owned by it: it ends when the
// process exits, and stop waits for that.
type process struct {
	name    string
	bin     string
	args    []string
	logPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has exited; nil before the first start
}

// start runs the process. It must not be running.
func (p *process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited != nil {
		select {
		case <-p.exited:
		default:
			return fmt.Errorf("%s is already running (pid %d)", p.name, p.cmd.Process.Pid)
		}
	}
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open %s log: %w", p.name, err)
	}
	// The child writes the file itself (an *os.File is handed over as its
	// stdout and stderr), so no goroutine of ours copies output and nothing
	// is lost when the test process dies first.
	defer func() { _ = logf.Close() }()
	fmt.Fprintf(logf, "==== %s: starting %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), p.bin, strings.Join(p.args, " "))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Pdeathsig: if the test binary is killed (go test's -timeout panics,
	// ^C), the kernel kills the control plane too instead of leaving it
	// running on the shared machine. The harness still stops every process
	// itself on cleanup.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	p.cmd, p.exited = cmd, exited
	return nil
}

// pid is the process id of the current (or last) run, 0 before the first.
func (p *process) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// running reports whether the current run has not exited.
func (p *process) running() bool {
	p.mu.Lock()
	exited := p.exited
	p.mu.Unlock()
	if exited == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM to the process by its pid, waits up to grace for it to
// exit, then sends SIGKILL and waits up to killWait (an error wrapping
// errKilled when that worked). It is a no-op when the process is not
// running.
func (p *process) stop(grace time.Duration) error {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if exited == nil {
		return nil
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGTERM %s (pid %d): %w", p.name, cmd.Process.Pid, err)
	}
	select {
	case <-exited:
		return nil
	case <-time.After(grace):
	}
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGKILL %s (pid %d): %w", p.name, cmd.Process.Pid, err)
	}
	select {
	case <-exited:
		return fmt.Errorf("%s (pid %d) ignored SIGTERM for %v: %w", p.name, cmd.Process.Pid, grace, errKilled)
	case <-time.After(killWait):
		return fmt.Errorf("%s (pid %d) still running %v after SIGKILL", p.name, cmd.Process.Pid, killWait)
	}
}

// logContains reports whether the process's log holds s.
func (p *process) logContains(s string) bool {
	b, err := os.ReadFile(p.logPath)
	return err == nil && bytes.Contains(b, []byte(s))
}

// tail is the last n lines of the process's log.
func (p *process) tail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
