package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// etcdStartTimeout bounds how long a member (or a cluster) may take to
// answer /health; generous because the 2-core machine is shared.
const etcdStartTimeout = 30 * time.Second

// etcdProc is one etcd member run as a real process (Debian's
// etcd-server), so that a test can stop it dead (SIGSTOP) under a serving
// replica, the way a lost quorum looks to a client (connections stay open
// and nothing answers), or kill it with -9 and start it again on the same
// data directory and ports.
type etcdProc struct {
	*testdeps.Process
	// Name is the member's --name.
	Name string
	// Endpoint is the client URL, http://127.0.0.1:PORT.
	Endpoint string
	// peer is the peer URL: what tells this member from any other process
	// that may answer on Endpoint (see testdeps.EtcdMemberServes).
	peer string
}

// startEtcdMember runs bin (etcd) as member name on client and peer with
// args; it is stopped when the test ends (continued first if stopped).
func startEtcdMember(t *testing.T, bin, name, client, peer string, args ...string) *etcdProc {
	t.Helper()
	p := testdeps.StartProcess(t, "etcd "+name, testdeps.ProcessOptions{}, append([]string{bin}, args...)...)
	return &etcdProc{Process: p, Name: name, Endpoint: client, peer: peer}
}

// etcdCluster is a set of etcd members started together.
type etcdCluster struct {
	Members []*etcdProc
}

// startEtcdProcess starts a single-member etcd on free ports in a
// temporary directory and waits until it answers /health; it is killed
// when the test ends, after being continued if it was stopped.
func startEtcdProcess(t *testing.T) *etcdProc {
	t.Helper()
	return startEtcdCluster(t, 1).Members[0]
}

// startEtcdCluster starts an n-member etcd cluster on free ports (all
// members at once: each waits for the others to form the cluster) and
// waits until every member answers /health. A free port can be taken by
// another process between freePort and etcd's bind (tests run in
// parallel); the member then exits, and the cluster is started again on
// new ports, up to etcdStartAttempts times.
func startEtcdCluster(t *testing.T, n int) *etcdCluster {
	t.Helper()
	bin := testdeps.Debian(t, "etcd-server", "etcd")
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

// etcdStartAttempts bounds startEtcdCluster's retries.
const etcdStartAttempts = 3

// tryStartEtcdCluster is one attempt of startEtcdCluster: the cluster, or
// the first member whose process exited before it answered /health (the
// others are left running for the caller to stop).
func tryStartEtcdCluster(t *testing.T, bin string, n int) (*etcdCluster, *etcdProc) {
	t.Helper()
	dir := t.TempDir()
	c := &etcdCluster{}
	var initial []string
	peers := make([]string, n)
	for i := range n {
		peers[i] = fmt.Sprintf("http://127.0.0.1:%d", testdeps.FreePort(t))
		initial = append(initial, fmt.Sprintf("m%d=%s", i, peers[i]))
	}
	for i := range n {
		name := fmt.Sprintf("m%d", i)
		client := fmt.Sprintf("http://127.0.0.1:%d", testdeps.FreePort(t))
		m := startEtcdMember(t, bin, name, client, peers[i],
			"--name", name, "--data-dir", filepath.Join(dir, name),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peers[i], "--initial-advertise-peer-urls", peers[i],
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "e2e", "--log-level", "error")
		c.Members = append(c.Members, m)
	}
	for _, m := range c.Members {
		if !m.waitHealthy(t) {
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

// Restart starts the member again (after Kill: kill -9) on the same data
// directory and ports and waits until it answers /health.
func (p *etcdProc) Restart(t *testing.T) {
	t.Helper()
	p.Process.Restart()
	if !p.waitHealthy(t) {
		t.Fatalf("etcd %s exited on restart; log:\n%s", p.Name, p.Output())
	}
}

// waitHealthy waits until the member answers /health as itself, and
// reports false if its process exited first (its port was taken).
func (p *etcdProc) waitHealthy(t *testing.T) bool {
	t.Helper()
	gone := false
	if _, err := waitFor(etcdStartTimeout, func() (bool, error) {
		if !p.Running() {
			gone = true
			return true, nil
		}
		return testdeps.EtcdMemberServes(p.Endpoint, p.peer), nil
	}); err != nil {
		t.Fatalf("etcd %s did not become healthy within %v: %v; log:\n%s", p.Name, etcdStartTimeout, err, p.Output())
	}
	return !gone
}

// Endpoints is the members' client URLs, comma-separated, for
// --etcd-servers.
func (c *etcdCluster) Endpoints() string {
	var eps []string
	for _, m := range c.Members {
		eps = append(eps, m.Endpoint)
	}
	return strings.Join(eps, ",")
}

// Leader is the member that is raft leader now, as the members report it
// (every member it can reach must name the same one); it waits up to
// within for an elected leader.
func (c *etcdCluster) Leader(t *testing.T, within time.Duration) *etcdProc {
	t.Helper()
	var leader *etcdProc
	if _, err := waitFor(within, func() (bool, error) {
		leader = nil
		ids := map[uint64]*etcdProc{}
		var leaderID uint64
		for _, m := range c.Members {
			id, lead, err := memberStatus(m.Endpoint)
			if err != nil {
				continue // a member that is down
			}
			ids[id] = m
			if leaderID != 0 && lead != leaderID {
				return false, fmt.Errorf("members disagree on the leader: %x and %x", leaderID, lead)
			}
			leaderID = lead
		}
		leader = ids[leaderID]
		return leader != nil, fmt.Errorf("leader %x is not among the members that answer", leaderID)
	}); err != nil {
		t.Fatalf("no etcd leader within %v: %v", within, err)
	}
	return leader
}

// memberStatus asks one member for its id and the leader it follows.
func memberStatus(endpoint string) (id, leader uint64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return 0, 0, fmt.Errorf("etcd client for %s: %w", endpoint, err)
	}
	defer cli.Close()
	st, err := cli.Status(ctx, endpoint)
	if err != nil {
		return 0, 0, fmt.Errorf("status of %s: %w", endpoint, err)
	}
	return st.Header.MemberId, st.Leader, nil
}
