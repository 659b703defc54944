package etcd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/testdeps"
)

// TestRequestsGoToTheLeader: on a 3-member cluster (Debian's etcd, real
// processes) whose leader is listed last, the driver sends every request
// to the leader, none to the followers (which would forward them); when
// the leader is killed, writes go on through the others.
func TestRequestsGoToTheLeader(t *testing.T) {
	bin := testdeps.Debian(t, "etcd-server", "etcd")
	members, procs := startDebianCluster(t, bin, 3)
	ctx := testContext(t)
	probe := newTestStore(t, members[0], "")
	var leader string
	var followers []string
	for _, ep := range members {
		st, err := probe.Client().Status(ctx, ep)
		if err != nil {
			t.Fatal(err)
		}
		if st.Leader == st.Header.MemberId {
			leader = ep
		} else {
			followers = append(followers, ep)
		}
	}
	if leader == "" {
		t.Fatal("no leader")
	}
	s := newTestStoreOn(t, append(followers, leader), "")
	if got := s.Client().Endpoints()[0]; got != leader {
		t.Fatalf("first endpoint %s, want the leader %s", got, leader)
	}
	before := map[string]float64{}
	for _, ep := range members {
		before[ep] = txnCount(t, ep)
	}
	rev, err := s.Create(ctx, "/registry/k/a", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	for range 30 {
		if rev, err = s.Update(ctx, "/registry/k/a", rev, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if d := txnCount(t, leader) - before[leader]; d < 31 {
		t.Errorf("leader %s got %v transactions, want the 31 writes", leader, d)
	}
	for _, f := range followers {
		if d := txnCount(t, f) - before[f]; d != 0 {
			t.Errorf("follower %s got %v transactions, want none", f, d)
		}
	}

	// The leader dies: the client moves on to a follower, which the other
	// one elects, and writes go on.
	if err := procs[slices.Index(members, leader)].Process.Kill(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		next, err := s.Update(ctx, "/registry/k/a", rev, []byte("after"))
		if err == nil {
			t.Logf("first write after the leader died: revision %d", next)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write succeeded within 20s of the leader's death: %v", err)
		}
		if errors.Is(err, storage.ErrConflict) {
			// An attempt whose answer was lost with the leader was made.
			if kv, err := s.Get(ctx, "/registry/k/a"); err == nil {
				rev = kv.ModRevision
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// txnCount reads how many Txn requests the member at ep has begun.
func txnCount(t *testing.T, ep string) float64 {
	t.Helper()
	resp, err := http.Get(ep + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "grpc_server_started_total{") && strings.Contains(line, `grpc_method="Txn"`) {
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no Txn counter in %s/metrics", ep)
	return 0
}

// newTestStoreOn is newTestStore with several endpoints.
func newTestStoreOn(t testing.TB, endpoints []string, prefix string) *Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	s, err := New(ctx, Config{Endpoints: endpoints, Prefix: prefix})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// freePort returns a port free on 127.0.0.1 a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// startDebianCluster runs an n-member etcd from bin on free ports (each
// stopped by its PID when the test ends) and returns the members' client
// URLs, and their processes, once every one of them is healthy. A free
// port can be taken by another process before etcd binds it (tests run in
// parallel): that member exits, and the cluster is started again on new
// ports, up to three times.
func startDebianCluster(t testing.TB, bin string, n int) ([]string, []*exec.Cmd) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		clients, procs, err := tryDebianCluster(t, bin, n)
		if err == nil {
			return clients, procs
		}
		if attempt == 3 {
			t.Fatal(err)
		}
		t.Logf("%v; starting the cluster again on new ports", err)
	}
}

// tryDebianCluster is one attempt of startDebianCluster. On an error its
// processes are already stopped.
func tryDebianCluster(t testing.TB, bin string, n int) ([]string, []*exec.Cmd, error) {
	t.Helper()
	clients := make([]string, n)
	peers := make([]string, n)
	procs := make([]*exec.Cmd, n)
	exited := make([]chan struct{}, n)
	var cluster []string
	for i := range n {
		clients[i] = fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
		peers[i] = fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
		cluster = append(cluster, fmt.Sprintf("m%d=%s", i, peers[i]))
	}
	stop := func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Process.Kill()
		<-done
	}
	for i := range n {
		cmd := exec.Command(bin, "--name", fmt.Sprintf("m%d", i), "--data-dir", t.TempDir(),
			"--listen-client-urls", clients[i], "--advertise-client-urls", clients[i],
			"--listen-peer-urls", peers[i], "--initial-advertise-peer-urls", peers[i],
			"--initial-cluster", strings.Join(cluster, ","), "--initial-cluster-state", "new",
			"--unsafe-no-fsync")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		// Owned by the process: it ends when etcd exits.
		go func() {
			_ = cmd.Wait()
			close(done)
		}()
		procs[i], exited[i] = cmd, done
		t.Cleanup(func() { stop(cmd, done) })
	}
	deadline := time.Now().Add(30 * time.Second)
	for i, c := range clients {
		for !testdeps.EtcdMemberServes(c, peers[i]) {
			select {
			case <-exited[i]:
				for j := range procs {
					stop(procs[j], exited[j])
				}
				return nil, nil, fmt.Errorf("etcd member %s exited at start (its port taken meanwhile?)", c)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("etcd member %s not healthy within 30s", c)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return clients, procs, nil
}

// TestRequestsFollowTheLeader: when etcd moves leadership to another
// member, the driver's writes follow it within a few leader checks, and
// none keep going to the old leader (which would forward them).
func TestRequestsFollowTheLeader(t *testing.T) {
	bin := testdeps.Debian(t, "etcd-server", "etcd")
	members, _ := startDebianCluster(t, bin, 3)
	ctx := testContext(t)
	s, err := New(ctx, Config{Endpoints: members, leaderCheck: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	leader := s.Client().Endpoints()[0]
	var target string
	var targetID uint64
	for _, ep := range members {
		st, err := s.Client().Status(ctx, ep)
		if err != nil {
			t.Fatal(err)
		}
		if ep != leader {
			target, targetID = ep, st.Header.MemberId
			break
		}
	}
	// MoveLeader must reach the leader: the driver's own connection does.
	if _, err := s.Client().MoveLeader(ctx, targetID); err != nil {
		t.Fatalf("moving leadership to %s: %v", target, err)
	}
	rev, err := s.Create(ctx, "/registry/k/a", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		before := map[string]float64{}
		for _, ep := range members {
			before[ep] = txnCount(t, ep)
		}
		for range 10 {
			if rev, err = s.Update(ctx, "/registry/k/a", rev, []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
		onTarget, elsewhere := txnCount(t, target)-before[target], 0.0
		for _, ep := range members {
			if ep != target {
				elsewhere += txnCount(t, ep) - before[ep]
			}
		}
		if onTarget >= 10 && elsewhere == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("15s after leadership moved to %s, 10 writes went %v to it and %v elsewhere", target, onTarget, elsewhere)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := s.Client().Endpoints(); len(got) != len(members) || got[0] != target {
		t.Fatalf("endpoints %v, want all %d with the new leader %s first", got, len(members), target)
	}
}
