package testdeps

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// DefaultStopTimeout bounds a graceful stop (SIGTERM) before SIGKILL when
// ProcessOptions leaves StopTimeout zero; generous because the 2-core
// machine is shared.
const DefaultStopTimeout = 20 * time.Second

// ProcessOptions says how a test's process is stopped.
type ProcessOptions struct {
	// CleanExit fails the test unless every stop of the process (Stop, a
	// Restart, the test's end) finds it exited with status 0, as a
	// leasehold command promises on SIGTERM; a process that crashed before
	// is reported too. Kill is never checked.
	CleanExit bool
	// StopTimeout bounds Stop's wait after SIGTERM, after which the process
	// is killed and the test fails; DefaultStopTimeout if zero.
	StopTimeout time.Duration
}

// Process is one process a test started. Its stdout and stderr are kept
// line by line across restarts, so a test can wait for a line (WaitLine)
// and print the whole output if it failed. It is stopped by its PID when
// the test ends, and Restart runs it again with the same arguments.
//
// One goroutine per run owns the output pipe: it ends when the process
// exits, which Stop, Kill and Wait wait for.
type Process struct {
	name string
	t    testing.TB
	argv []string
	opts ProcessOptions

	out Lines

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed once the current run has exited and exitErr is set
	exitErr error
	stopped bool // the current run was stopped or killed, or its exit reported
}

// StartProcess runs argv (argv[0] a path or a name on PATH) as name. When
// the test ends the process is stopped (Stop) and, if the test failed, its
// output is printed.
func StartProcess(t testing.TB, name string, opts ProcessOptions, argv ...string) *Process {
	t.Helper()
	p := &Process{name: name, t: t, argv: argv, opts: opts}
	p.start()
	t.Cleanup(func() {
		_ = p.Stop()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.Output())
		}
	})
	return p
}

func (p *Process) start() {
	p.t.Helper()
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		p.t.Fatalf("%s: stdout pipe: %v", p.name, err)
	}
	// One pipe for both, so lines keep the order the process wrote them in.
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("starting %s: %v", p.name, err)
	}
	exited := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.exited, p.exitErr, p.stopped = cmd, exited, nil, false
	p.mu.Unlock()
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			p.out.Add(sc.Text())
		}
		// A line longer than the buffer ends the scan; drain the rest so the
		// process never blocks on a full pipe.
		_, _ = io.Copy(io.Discard, out)
		err := cmd.Wait()
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		close(exited)
	}()
}

// Name is the name the process was started as.
func (p *Process) Name() string { return p.name }

// Pid is the process id of the current run.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// Output is every line the process has written so far, across restarts,
// each ending in a newline.
func (p *Process) Output() string { return p.out.String() }

// Tail is the last n lines of the output.
func (p *Process) Tail(n int) string { return p.out.Tail(n) }

// Mark is the number of lines written so far: WaitLine from a mark looks
// only at what came after it.
func (p *Process) Mark() int { return p.out.Mark() }

// WaitLine waits up to timeout for a line at or after mark that contains
// every one of parts, and returns it. It fails the test if the process
// exits without writing one, or none comes in time.
func (p *Process) WaitLine(mark int, timeout time.Duration, parts ...string) string {
	p.t.Helper()
	line, _, err := p.AwaitLine(mark, timeout, parts...)
	if err != nil {
		p.t.Fatal(err)
	}
	return line
}

// AwaitLine is WaitLine that also returns the line's index (index+1 marks
// what comes after it), and an error instead of failing the test.
func (p *Process) AwaitLine(mark int, timeout time.Duration, parts ...string) (string, int, error) {
	line, i, err := p.out.Await(mark, timeout, p.Exited(), parts...)
	if errors.Is(err, errEnded) {
		return "", 0, fmt.Errorf("%s exited (%v): %w; output:\n%s", p.name, p.ExitErr(), err, p.Output())
	}
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w; output:\n%s", p.name, err, p.Output())
	}
	return line, i, nil
}

// Exited is closed once the current run has exited.
func (p *Process) Exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// Running reports whether the current run has not exited.
func (p *Process) Running() bool {
	select {
	case <-p.Exited():
		return false
	default:
		return true
	}
}

// ExitErr is how the current run exited (nil for status 0, or while it
// runs).
func (p *Process) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

// Wait waits up to timeout for the process to exit by itself and returns
// its exit status; after timeout it is killed and the test fails. A
// process waited for is not reported again by Stop.
func (p *Process) Wait(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.Exited():
	case <-time.After(timeout):
		p.Kill()
		p.t.Fatalf("%s did not exit within %v", p.name, timeout)
	}
	p.markStopped()
	err := p.ExitErr()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		p.t.Fatalf("%s: %v", p.name, err)
	}
	return 0
}

// Signal sends sig to the process by its PID; a process that has exited
// is not an error.
func (p *Process) Signal(sig os.Signal) {
	p.t.Helper()
	p.mu.Lock()
	proc := p.cmd.Process
	p.mu.Unlock()
	if err := proc.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.t.Fatalf("%v to %s (pid %d): %v", sig, p.name, proc.Pid, err)
	}
}

// Pause freezes the process with SIGSTOP: it keeps its connections but
// does nothing, like a hung program or a machine cut off from the network.
func (p *Process) Pause() { p.Signal(syscall.SIGSTOP) }

// Resume continues a paused process with SIGCONT.
func (p *Process) Resume() { p.Signal(syscall.SIGCONT) }

// Stop ends the current run: SIGCONT (in case it is paused) and SIGTERM,
// then SIGKILL after the stop timeout, which fails the test. It returns
// how the run exited (nil for status 0); with CleanExit anything else also
// fails the test. Once the run was stopped, killed or waited for, Stop
// only returns that.
func (p *Process) Stop() error {
	p.t.Helper()
	if !p.markStopped() {
		<-p.Exited()
		return p.ExitErr()
	}
	p.mu.Lock()
	proc, exited := p.cmd.Process, p.exited
	p.mu.Unlock()
	_ = proc.Signal(syscall.SIGCONT)
	_ = proc.Signal(syscall.SIGTERM)
	timeout := p.opts.StopTimeout
	if timeout == 0 {
		timeout = DefaultStopTimeout
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-exited:
		err := p.ExitErr()
		if err != nil && p.opts.CleanExit {
			p.t.Errorf("%s exited after SIGTERM with %v", p.name, err)
		}
		return err
	case <-timer.C:
		p.t.Errorf("%s did not exit within %v of SIGTERM; killing it", p.name, timeout)
		_ = proc.Kill()
		<-exited
		return p.ExitErr()
	}
}

// Kill ends the current run with SIGKILL, as a crash would, and waits for
// it to be gone. Like Stop it is a no-op once the run was stopped.
func (p *Process) Kill() {
	if !p.markStopped() {
		return
	}
	p.mu.Lock()
	proc, exited := p.cmd.Process, p.exited
	p.mu.Unlock()
	_ = proc.Kill()
	<-exited
}

// Restart stops the current run if it is still going (Stop) and starts
// the process again with the same arguments; its output goes on after
// what the earlier runs wrote.
func (p *Process) Restart() {
	p.t.Helper()
	_ = p.Stop()
	p.start()
}

// Forget marks the current run as stopped without signalling it: for a
// process a test expected to exit by itself and has judged already, so
// that Stop does not report its exit again.
func (p *Process) Forget() { p.markStopped() }

// markStopped reports whether the current run was not yet stopped, and
// marks it stopped.
func (p *Process) markStopped() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return false
	}
	p.stopped = true
	return true
}
