package clients

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// server is one `leasehold serve` process.
type server struct {
	// Kubeconfig is the admin kubeconfig serve wrote (system:masters).
	Kubeconfig string
	// URL is https://127.0.0.1:PORT.
	URL string

	cmd    *exec.Cmd
	mu     sync.Mutex
	log    strings.Builder
	exited chan struct{}
}

// startServer runs serve on a free port and a fresh data directory, and
// waits (at most a minute, the machine is shared) for its serving line;
// extraArgs are more serve flags.
// The test's cleanup stops it with SIGTERM, then SIGKILL after 20 s, and
// prints its log if the test failed.
func startServer(t *testing.T, extraArgs ...string) *server {
	t.Helper()
	cmd := exec.Command(leaseholdBinary, append([]string{"serve", "--data-dir", filepath.Join(t.TempDir(), "data"),
		"--secure-port", "0", "--bind-address", "127.0.0.1"}, extraArgs...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting serve: %v", err)
	}
	s := &server{cmd: cmd, exited: make(chan struct{})}
	serving := make(chan struct{ Address, Kubeconfig string }, 1)
	// Owned by the process: it ends when the process's stderr closes.
	go func() {
		defer close(s.exited)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			s.mu.Lock()
			s.log.Write(sc.Bytes())
			s.log.WriteByte('\n')
			s.mu.Unlock()
			var l struct{ Msg, Address, Kubeconfig string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "serving" {
				select {
				case serving <- struct{ Address, Kubeconfig string }{l.Address, l.Kubeconfig}:
				default:
				}
			}
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(20 * time.Second):
			t.Errorf("serve did not stop within 20 s of SIGTERM; killing it")
			_ = cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			t.Logf("serve log:\n%s", s.logs())
		}
	})
	select {
	case l := <-serving:
		s.URL, s.Kubeconfig = l.Address, l.Kubeconfig
	case <-s.exited:
		t.Fatalf("serve exited before serving:\n%s", s.logs())
	case <-time.After(time.Minute):
		t.Fatalf("serve did not log its serving line within a minute:\n%s", s.logs())
	}
	return s
}

func (s *server) logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}
