package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// etcdProc is one single-member etcd server run as a real process
// (Debian's etcd-server), so that a test can stop it dead (SIGSTOP) under a
// serving replica, the way a lost quorum looks to a client: connections
// stay open and nothing answers.
type etcdProc struct {
	// Endpoint is the client URL, http://127.0.0.1:PORT.
	Endpoint string
	t        *testing.T
	cmd      *exec.Cmd
	exited   chan struct{}
}

// startEtcdProcess starts etcd on free ports in a temporary directory and
// waits (at most 30 s) until it answers /health; it is killed when the test
// ends, after being continued if it was stopped.
func startEtcdProcess(t *testing.T) *etcdProc {
	t.Helper()
	bin := testdeps.Debian(t, "etcd-server", "etcd")
	client := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	peer := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	dir := filepath.Join(t.TempDir(), "etcd")
	cmd := exec.Command(bin, "--name", "e2e", "--data-dir", dir,
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "e2e="+peer, "--log-level", "error")
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = etcdLog{logs}, etcdLog{logs}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting etcd: %v", err)
	}
	p := &etcdProc{Endpoint: client, t: t, cmd: cmd, exited: make(chan struct{})}
	// Owned by the process: it ends when etcd exits (the cleanup kills it).
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("etcd log:\n%s", logs.String())
		}
	})
	if _, err := waitFor(30*time.Second, func() (bool, error) { return p.healthy(), nil }); err != nil {
		t.Fatalf("etcd did not become healthy within 30s: %v; log:\n%s", err, logs.String())
	}
	return p
}

// healthy reports whether etcd answers its /health endpoint with 200.
func (p *etcdProc) healthy() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.Endpoint+"/health", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Pause freezes etcd (SIGSTOP); Resume lets it run again (SIGCONT).
func (p *etcdProc) Pause()  { p.signal(syscall.SIGSTOP) }
func (p *etcdProc) Resume() { p.signal(syscall.SIGCONT) }

func (p *etcdProc) signal(sig os.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.t.Fatalf("signal %v to etcd (pid %s): %v", sig, strconv.Itoa(p.cmd.Process.Pid), err)
	}
}

// etcdLog collects etcd's output into a syncBuffer.
type etcdLog struct{ b *syncBuffer }

func (w etcdLog) Write(p []byte) (int, error) {
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	return w.b.buf.Write(p)
}
