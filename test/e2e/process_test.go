package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	// serverStartTimeout bounds how long a server may take to log its
	// serving line; generous because the 2-core machine is shared.
	serverStartTimeout = 60 * time.Second
	// serverStopTimeout bounds a graceful stop before SIGKILL.
	serverStopTimeout = 30 * time.Second
)

// serverProc is one running `leasehold serve` process.
type serverProc struct {
	// URL is the address from the serving log line, "https://127.0.0.1:PORT".
	URL string
	// Addr is URL's host:port.
	Addr string
	// Kubeconfig is the admin kubeconfig the server wrote (system:masters).
	Kubeconfig string
	// DataDir is the server's --data-dir.
	DataDir string

	t    testing.TB
	cmd  *exec.Cmd
	logs *syncBuffer
	// exited is closed once the process has exited and exitErr is set.
	exited  chan struct{}
	exitErr error
	stopMu  sync.Mutex
	stopped bool
}

// servingLine is the part of the server's JSON log line we rely on.
type servingLine struct {
	Msg        string `json:"msg"`
	Address    string `json:"address"`
	Kubeconfig string `json:"kubeconfig"`
}

// startServer starts `leasehold serve` on a free port with a fresh data dir
// (plus extraArgs) and waits for its serving line. The process is stopped
// gracefully when the test ends; its log is printed if the test failed.
func startServer(t testing.TB, extraArgs ...string) *serverProc {
	t.Helper()
	return startServerIn(t, filepath.Join(t.TempDir(), "data"), extraArgs...)
}

// startServerIn is startServer on a given data dir (reuse one to test
// restarts).
func startServerIn(t testing.TB, dataDir string, extraArgs ...string) *serverProc {
	t.Helper()
	return startServerVia(t, nil, dataDir, extraArgs...)
}

// startServerVia is startServerIn run through launcher, a command that
// execs the rest of its arguments (such as prlimit), so that the process
// it starts is still the server.
func startServerVia(t testing.TB, launcher []string, dataDir string, extraArgs ...string) *serverProc {
	t.Helper()
	p, err := launchServer(t, serverStartTimeout, launcher, dataDir, extraArgs...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// launchServer is startServerVia for a test that expects the server may
// refuse to start: it returns an error if the process exits before serving
// (then p.exitErr holds its status and the cleanup does not report it) or
// does not serve within timeout (then the cleanup stops it).
func launchServer(t testing.TB, timeout time.Duration, launcher []string, dataDir string, extraArgs ...string) (*serverProc, error) {
	t.Helper()
	args := append([]string{"serve", "--data-dir", dataDir, "--secure-port", "0", "--bind-address", "127.0.0.1"}, extraArgs...)
	argv := append(append(append([]string(nil), launcher...), leaseholdBinary), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatalf("server stderr pipe: %v", err)
	}
	p := &serverProc{DataDir: dataDir, t: t, cmd: cmd, logs: &syncBuffer{}, exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", leaseholdBinary, err)
	}
	serving := make(chan servingLine, 1)
	// This goroutine is owned by the process: it ends when the process
	// exits (stderr reaches EOF), which Stop and Kill wait for.
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		sent := false
		for sc.Scan() {
			line := sc.Bytes()
			p.logs.writeLine(line)
			if sent {
				continue
			}
			var l servingLine
			if json.Unmarshal(line, &l) == nil && l.Msg == "serving" {
				serving <- l
				sent = true
			}
		}
		p.exitErr = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("server %s log:\n%s", p.URL, p.logs.String())
		}
	})

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case l := <-serving:
		return p, p.setAddress(l)
	case <-p.exited:
		p.markStopped()
		return p, fmt.Errorf("server exited before serving (%v); log:\n%s", p.exitErr, p.logs.String())
	case <-timer.C:
		return p, fmt.Errorf("server did not log its serving line within %v; log:\n%s", timeout, p.logs.String())
	}
}

func (p *serverProc) setAddress(l servingLine) error {
	u, err := url.Parse(l.Address)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("serving line has address %q, want https://HOST:PORT (parse error: %v)", l.Address, err)
	}
	if l.Kubeconfig == "" {
		return errors.New("serving line has no kubeconfig")
	}
	p.URL, p.Addr, p.Kubeconfig = l.Address, u.Host, l.Kubeconfig
	return nil
}

// Stop sends SIGTERM and waits for the process to exit; the server promises
// exit status 0 on SIGTERM, so anything else fails the test. After
// serverStopTimeout it is killed. Stop is idempotent.
func (p *serverProc) Stop() {
	p.t.Helper()
	if !p.markStopped() {
		return
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.t.Errorf("SIGTERM to server: %v", err)
	}
	timer := time.NewTimer(serverStopTimeout)
	defer timer.Stop()
	select {
	case <-p.exited:
		if p.exitErr != nil {
			p.t.Errorf("server exited after SIGTERM with %v", p.exitErr)
		}
	case <-timer.C:
		p.t.Errorf("server did not exit within %v of SIGTERM; killing it", serverStopTimeout)
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// Kill sends SIGKILL (a crash) and waits for the process to be gone.
// Kill is idempotent and makes a later Stop a no-op.
func (p *serverProc) Kill() {
	p.t.Helper()
	if !p.markStopped() {
		return
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.t.Errorf("SIGKILL to server: %v", err)
	}
	<-p.exited
}

// Logs returns everything the server has written to stderr so far.
func (p *serverProc) Logs() string { return p.logs.String() }

func (p *serverProc) markStopped() bool {
	p.stopMu.Lock()
	defer p.stopMu.Unlock()
	if p.stopped {
		return false
	}
	p.stopped = true
	return true
}

// syncBuffer collects log lines written by one goroutine and read by others.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) writeLine(line []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(line)
	b.buf.WriteByte('\n')
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
