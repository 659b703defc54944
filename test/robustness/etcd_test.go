package robustness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// etcdMember is one member of a Debian etcd cluster run as a real process,
// killed and restarted on the same data dir and ports, or frozen.
type etcdMember struct {
	t        testing.TB
	name     string
	endpoint string // client URL
	peer     string // peer URL, which tells this member from another process on its port
	bin      string
	args     []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	logs   strings.Builder
}

// startEtcd starts an n-member cluster on free ports and waits until every
// member is healthy; the members are killed when the test ends. A member
// whose port was taken meanwhile fails the start (the test says so).
func startEtcd(t *testing.T, n int) []*etcdMember {
	t.Helper()
	bin := testdeps.Debian(t, "etcd-server", "etcd")
	dir := t.TempDir()
	var initial []string
	peers := make([]string, n)
	for i := range n {
		peers[i] = fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
		initial = append(initial, fmt.Sprintf("m%d=%s", i, peers[i]))
	}
	var ms []*etcdMember
	for i := range n {
		name := fmt.Sprintf("m%d", i)
		client := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
		m := &etcdMember{t: t, name: name, endpoint: client, peer: peers[i], bin: bin, args: []string{
			"--name", name, "--data-dir", filepath.Join(dir, name),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peers[i], "--initial-advertise-peer-urls", peers[i],
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "robustness", "--log-level", "error",
		}}
		if err := m.launch(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			m.kill()
			if t.Failed() {
				m.mu.Lock()
				t.Logf("etcd %s log:\n%s", m.name, m.logs.String())
				m.mu.Unlock()
			}
		})
		ms = append(ms, m)
	}
	for _, m := range ms {
		if err := m.waitHealthy(); err != nil {
			t.Fatal(err)
		}
	}
	return ms
}

func (m *etcdMember) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.logs.Write(p)
}

func (m *etcdMember) launch() error {
	cmd := exec.Command(m.bin, m.args...)
	cmd.Stdout, cmd.Stderr = m, m
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting etcd %s: %w", m.name, err)
	}
	exited := make(chan struct{})
	// Owned by the process: ends when etcd exits, which kill waits for.
	go func() { _ = cmd.Wait(); close(exited) }()
	m.mu.Lock()
	m.cmd, m.exited = cmd, exited
	m.mu.Unlock()
	return nil
}

// start restarts a killed member and waits until it is healthy.
func (m *etcdMember) start() error {
	if err := m.launch(); err != nil {
		return err
	}
	return m.waitHealthy()
}

func (m *etcdMember) waitHealthy() error {
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		m.mu.Lock()
		exited := m.exited
		m.mu.Unlock()
		select {
		case <-exited:
			return fmt.Errorf("etcd %s exited at start; log:\n%s", m.name, m.logsString())
		default:
		}
		if testdeps.EtcdMemberServes(m.endpoint, m.peer) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("etcd %s not healthy within %v; log:\n%s", m.name, startTimeout, m.logsString())
}

func (m *etcdMember) logsString() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.logs.String()
}

// kill is kill -9 (after SIGCONT, in case it was frozen); a no-op once it
// has exited.
func (m *etcdMember) kill() {
	m.mu.Lock()
	cmd, exited := m.cmd, m.exited
	m.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGCONT)
	_ = cmd.Process.Kill()
	<-exited
}

func (m *etcdMember) signal(sig syscall.Signal) {
	m.mu.Lock()
	cmd := m.cmd
	m.mu.Unlock()
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		m.t.Errorf("%v to etcd %s: %v", sig, m.name, err)
	}
}
