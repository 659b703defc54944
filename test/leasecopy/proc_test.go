package leasecopy

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is one process a test started, its output kept line by line.
type proc struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd

	mu    sync.Mutex
	lines []string
	grew  chan struct{} // closed and replaced when a line arrives

	exited  chan struct{} // closed once cmd has exited and err is set
	exitErr error
}

// startProc starts argv with stdout and stderr collected; the test's end
// kills it by its PID (if still running) and waits for it, and prints its
// output if the test failed.
func startProc(t *testing.T, name string, argv ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, cmd: exec.Command(argv[0], argv[1:]...), grew: make(chan struct{}), exited: make(chan struct{})}
	r, w := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = w, w
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	// Owned by the process: the scanner ends when the pipe closes, which
	// the waiter below does after the process exits.
	var scanned sync.WaitGroup
	scanned.Go(func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			close(p.grew)
			p.grew = make(chan struct{})
			p.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, r)
	})
	go func() {
		err := p.cmd.Wait()
		_ = w.Close()
		scanned.Wait()
		p.exitErr = err
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.output())
		}
	})
	return p
}

// output is everything the process printed so far.
func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// waitLine waits up to timeout for a line containing substr and returns
// it; it fails the test if none comes or the process exits first.
func (p *proc) waitLine(substr string, timeout time.Duration) string {
	p.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	seen := 0
	for {
		p.mu.Lock()
		lines, grew := p.lines, p.grew
		p.mu.Unlock()
		for ; seen < len(lines); seen++ {
			if strings.Contains(lines[seen], substr) {
				return lines[seen]
			}
		}
		select {
		case <-grew:
		case <-p.exited:
			p.mu.Lock()
			n := len(p.lines)
			p.mu.Unlock()
			if n > seen {
				continue
			}
			p.t.Fatalf("%s exited (%v) without printing %q", p.name, p.exitErr, substr)
		case <-deadline.C:
			p.t.Fatalf("%s printed no line with %q within %v", p.name, substr, timeout)
		}
	}
}

// wait waits up to timeout for the process to exit by itself and returns
// its exit code; after timeout it is killed and the test fails.
func (p *proc) wait(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(timeout):
		p.kill()
		p.t.Fatalf("%s did not exit within %v", p.name, timeout)
	}
	var ee *exec.ExitError
	if errors.As(p.exitErr, &ee) {
		return ee.ExitCode()
	}
	if p.exitErr != nil {
		p.t.Fatalf("%s: %v", p.name, p.exitErr)
	}
	return 0
}

// signal sends sig to the process by its PID.
func (p *proc) signal(sig os.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.t.Fatalf("signalling %s (pid %d): %v", p.name, p.cmd.Process.Pid, err)
	}
}

// stop ends the process gracefully (SIGTERM), killing it after 20 s, and
// returns its exit code.
func (p *proc) stop() int {
	p.t.Helper()
	p.signal(syscall.SIGTERM)
	return p.wait(20 * time.Second)
}

// kill ends the process with SIGKILL unless it already exited, and waits.
func (p *proc) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
}
