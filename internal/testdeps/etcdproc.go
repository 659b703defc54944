package testdeps

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// EtcdStartTimeout bounds how long a member (or a cluster) may take to
// answer /health; generous because the 2-core machine is shared.
const EtcdStartTimeout = 30 * time.Second

// etcdStartAttempts bounds StartEtcdCluster's retries on new ports.
const etcdStartAttempts = 3

// EtcdMember is one etcd member run as a real process (Debian's
// etcd-server), so that a test can stop it dead (Pause) under a client,
// the way a lost quorum looks (connections stay open and nothing answers),
// or kill it with -9 (Kill) and start it again on the same data directory
// and ports (Restart).
type EtcdMember struct {
	*Process
	// Name is the member's --name.
	Name string
	// Endpoint is the client URL, http://127.0.0.1:PORT.
	Endpoint string
	// peer is the peer URL: what tells this member from any other process
	// that may answer on Endpoint (see EtcdMemberServes).
	peer string
}

// EtcdCluster is a set of etcd members started together.
type EtcdCluster struct {
	Members []*EtcdMember
}

// StartEtcdMember runs bin (etcd) as member name on client and peer with
// args; it is stopped when the test ends (continued first if paused).
func StartEtcdMember(t testing.TB, bin, name, client, peer string, args ...string) *EtcdMember {
	t.Helper()
	p := StartProcess(t, "etcd "+name, ProcessOptions{}, append([]string{bin}, args...)...)
	return &EtcdMember{Process: p, Name: name, Endpoint: client, peer: peer}
}

// StartEtcdCluster starts an n-member etcd cluster (Debian's, installed if
// missing) on free ports, all members at once (each waits for the others
// to form the cluster), and waits until every member answers /health. A
// free port can be taken by another process before etcd binds it (tests
// run in parallel); the member then exits, and the cluster is started
// again on new ports, up to three times.
func StartEtcdCluster(t testing.TB, n int) *EtcdCluster {
	t.Helper()
	bin := Debian(t, "etcd-server", "etcd")
	for attempt := 1; ; attempt++ {
		c, exited := tryStartEtcdCluster(t, bin, n)
		if exited == nil {
			return c
		}
		if attempt == etcdStartAttempts {
			t.Fatalf("etcd %s exited at start %d times; log:\n%s", exited.Name, attempt, exited.Output())
		}
		t.Logf("etcd %s exited at start (a port taken meanwhile?); starting the cluster again on new ports; its log:\n%s", exited.Name, exited.Output())
		for _, m := range c.Members {
			m.Kill()
		}
	}
}

// tryStartEtcdCluster is one attempt of StartEtcdCluster: the cluster, or
// the first member whose process exited before it answered /health (the
// others are left running for the caller to stop).
func tryStartEtcdCluster(t testing.TB, bin string, n int) (*EtcdCluster, *EtcdMember) {
	t.Helper()
	dir := t.TempDir()
	c := &EtcdCluster{}
	var initial []string
	peers := make([]string, n)
	for i := range n {
		peers[i] = fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))
		initial = append(initial, fmt.Sprintf("m%d=%s", i, peers[i]))
	}
	for i := range n {
		name := fmt.Sprintf("m%d", i)
		client := fmt.Sprintf("http://127.0.0.1:%d", FreePort(t))
		c.Members = append(c.Members, StartEtcdMember(t, bin, name, client, peers[i],
			"--name", name, "--data-dir", filepath.Join(dir, name),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peers[i], "--initial-advertise-peer-urls", peers[i],
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "leasehold-test", "--log-level", "error"))
	}
	for _, m := range c.Members {
		if !m.WaitHealthy(t) {
			return c, m
		}
	}
	// A member that failed to bind may have exited only after another
	// process answered /health on its port: look once more.
	for _, m := range c.Members {
		if !m.Running() {
			return c, m
		}
	}
	return c, nil
}

// Restart starts the member again (after Kill) on the same data directory
// and ports and waits until it answers /health.
func (m *EtcdMember) Restart(t testing.TB) {
	t.Helper()
	m.Process.Restart()
	if !m.WaitHealthy(t) {
		t.Fatalf("etcd %s exited on restart; log:\n%s", m.Name, m.Output())
	}
}

// WaitHealthy waits until the member answers /health as itself, and
// reports false if its process exited first (its port was taken).
func (m *EtcdMember) WaitHealthy(t testing.TB) bool {
	t.Helper()
	gone := false
	Eventually(t, EtcdStartTimeout, 100*time.Millisecond, "etcd "+m.Name+" healthy", func() bool {
		if !m.Running() {
			gone = true
			return true
		}
		return EtcdMemberServes(m.Endpoint, m.peer)
	})
	return !gone
}

// Endpoints is the members' client URLs, comma-separated, for
// --etcd-servers.
func (c *EtcdCluster) Endpoints() string {
	var eps []string
	for _, m := range c.Members {
		eps = append(eps, m.Endpoint)
	}
	return strings.Join(eps, ",")
}
