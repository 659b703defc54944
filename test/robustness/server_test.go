package robustness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	// startTimeout bounds a start (or restart after a crash) of the server:
	// generous, the 2-core machine is shared.
	startTimeout = 60 * time.Second
	// stopTimeout bounds a graceful stop before SIGKILL.
	stopTimeout = 30 * time.Second
)

// server is one `leasehold serve` on a fixed port and data dir, which the
// fault injector kills, restarts and pauses. Its methods are called by one
// goroutine at a time (the test's, then the injector's).
type server struct {
	t       testing.TB
	bin     string // the leasehold binary
	dataDir string
	port    int
	args    []string
	env     []string // added to the test's environment
	// gofail is the address of gofail's HTTP endpoint in a failpoint
	// build (startFailpointServer), else empty.
	gofail string

	mu     sync.Mutex
	proc   *process // the running process, nil between a kill and a restart
	logs   bytes.Buffer
	starts int
}

// process is one lifetime of the server.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited
	err    error         // its exit status, once exited
	paused bool
}

// startServer starts the server on a free port with a fresh data dir and
// stops it when the test ends.
func startServer(t testing.TB, extraArgs ...string) *server {
	t.Helper()
	return startServerIn(t, filepath.Join(t.TempDir(), "data"), extraArgs...)
}

// startServerIn is startServer on a given data dir.
func startServerIn(t testing.TB, dataDir string, extraArgs ...string) *server {
	t.Helper()
	return launch(t, &server{t: t, bin: leaseholdBinary, dataDir: dataDir, port: freePort(t), args: extraArgs})
}

// launch starts s and stops it when the test ends.
func launch(t testing.TB, s *server) *server {
	t.Helper()
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	return s
}

// freePort returns a port nothing listens on now; the server binds it at
// each restart, so a port picked by the kernel once keeps the address fixed.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (s *server) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

func (s *server) kubeconfig() string { return filepath.Join(s.dataDir, "admin.kubeconfig") }

// restConfig is the admin's client configuration (the certificates stay in
// the data dir across restarts, and so does the address).
func (s *server) restConfig(t testing.TB) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig())
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	cfg.Host = "https://" + s.addr()
	cfg.QPS, cfg.Burst = -1, -1
	return cfg
}

// start runs a new lifetime and waits for its serving line. A port taken
// meanwhile by another process is retried for startTimeout.
func (s *server) start() error {
	deadline := time.Now().Add(startTimeout)
	for {
		err := s.startOnce(time.Until(deadline))
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (s *server) startOnce(timeout time.Duration) error {
	args := append([]string{"serve", "--data-dir", s.dataDir, "--secure-port", strconv.Itoa(s.port), "--bind-address", "127.0.0.1"}, s.args...)
	cmd := exec.Command(s.bin, args...)
	if len(s.env) > 0 {
		cmd.Env = append(os.Environ(), s.env...)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return fmt.Errorf("server stderr pipe: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", s.bin, err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	s.mu.Lock()
	s.starts++
	fmt.Fprintf(&s.logs, "=== start %d (pid %d)\n", s.starts, cmd.Process.Pid)
	s.mu.Unlock()
	serving := make(chan struct{})
	// Owned by the process: ends at its exit (EOF on stderr), which every
	// stop and kill waits for.
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		sent := false
		for sc.Scan() {
			s.mu.Lock()
			s.logs.Write(sc.Bytes())
			s.logs.WriteByte('\n')
			s.mu.Unlock()
			var l struct{ Msg string }
			if !sent && json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "serving" {
				close(serving)
				sent = true
			}
		}
		p.err = cmd.Wait()
		close(p.exited)
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-serving:
		s.mu.Lock()
		s.proc = p
		s.mu.Unlock()
		return nil
	case <-p.exited:
		return fmt.Errorf("server exited before serving: %v", p.err)
	case <-timer.C:
		_ = cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("server did not serve within %v", timeout)
	}
}

// kill is a crash: SIGKILL (resuming a paused process does not matter to
// SIGKILL) and wait until it is gone.
func (s *server) kill() {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		s.t.Errorf("SIGKILL to server: %v", err)
	}
	<-p.exited
}

// exitedUnexpectedly reports whether the running process exited on its
// own (a crash), with its status, and forgets it then.
func (s *server) exitedUnexpectedly() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return false, nil
	}
	select {
	case <-s.proc.exited:
		err := s.proc.err
		s.proc = nil
		return true, err
	default:
		return false, nil
	}
}

// awaitExit waits up to d for the running process to exit by itself and
// reports whether it did, with its status; it forgets the process then.
func (s *server) awaitExit(d time.Duration) (bool, error) {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil {
		return false, nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-p.exited:
	case <-timer.C:
		return false, nil
	}
	s.mu.Lock()
	if s.proc == p {
		s.proc = nil
	}
	s.mu.Unlock()
	return true, p.err
}

// pause sends SIGSTOP; resume sends SIGCONT.
func (s *server) pause() { s.signal(syscall.SIGSTOP, true) }

func (s *server) resume() { s.signal(syscall.SIGCONT, false) }

func (s *server) signal(sig syscall.Signal, paused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return
	}
	if err := s.proc.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		s.t.Errorf("%v to server: %v", sig, err)
	}
	s.proc.paused = paused
}

// stop resumes a paused server and stops it with SIGTERM, killing it after
// stopTimeout. It is the cleanup, and idempotent.
func (s *server) stop() {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-p.exited:
	case <-timer.C:
		s.t.Errorf("server did not exit within %v of SIGTERM; killing it", stopTimeout)
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// logLen and logsFrom read what was written to stderr since logLen was
// taken (every write of a process is in when its exit is seen).
func (s *server) logLen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.Len()
}

func (s *server) logsFrom(mark int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.logs.Bytes()[mark:])
}

// Logs returns everything every lifetime wrote to stderr.
func (s *server) Logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}
