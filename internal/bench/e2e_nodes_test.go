package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The flags a server needs for bench to renew as real nodes: tokens to
// authenticate them, and the Node authorizer to confine them.
var nodeIdentityServeFlags = []string{"--token-auth-file", "--authorization-mode"}

// buildLeasehold compiles the binary under test into a temporary directory.
func buildLeasehold(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "leasehold")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/leasehold/leasehold/cmd/leasehold").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./cmd/leasehold: %v\n%s", err, out)
	}
	return bin
}

// startServeProcess runs `leasehold serve` with args on a free port of
// 127.0.0.1 and a fresh data dir, and returns the admin kubeconfig it
// wrote. The process gets SIGTERM when the test ends, SIGKILL 30 s later.
func startServeProcess(t *testing.T, bin string, args ...string) string {
	t.Helper()
	args = append([]string{"serve", "--data-dir", filepath.Join(t.TempDir(), "data"), "--secure-port", "0", "--bind-address", "127.0.0.1"}, args...)
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kubeconfig := make(chan string, 1)
	exited := make(chan struct{})
	var log strings.Builder
	// Owned by the process: it ends at EOF on stderr, when the process exits.
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			var l struct{ Msg, Kubeconfig string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "serving" {
				select {
				case kubeconfig <- l.Kubeconfig:
				default:
				}
			}
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("server log:\n%s", log.String())
		}
	})
	select {
	case kc := <-kubeconfig:
		return kc
	case <-exited:
		t.Fatalf("server exited before serving")
	case <-time.After(60 * time.Second):
		t.Fatalf("server did not serve within 60s")
	}
	return ""
}

// TestE2ERenewAsNodes runs max, rate (registering Nodes) and a small fleet
// as real nodes against a real `leasehold serve --token-auth-file`: every
// request about a node's lease or Node is made with that node's token, so the Node
// authorizer and NodeRestriction judge it, and none may fail. A node's
// token on another node's lease is refused, which shows that the server
// really judged them as nodes. It skips, naming the flag, while `serve`
// lacks token authentication or the Node authorizer.
func TestE2ERenewAsNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it as a separate server: not in -short runs")
	}
	bin := buildLeasehold(t)
	help, err := exec.Command(bin, "serve", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("leasehold serve --help: %v\n%s", err, help)
	}
	for _, flag := range nodeIdentityServeFlags {
		if !strings.Contains(string(help), flag) {
			t.Skipf("leasehold serve has no %s flag yet (issue 21's authentication and Node authorizer): bench cannot renew as real nodes against it", flag)
		}
	}
	const leases, nodes, agents = 6, 4, 3
	tokenFile := filepath.Join(t.TempDir(), "tokens.csv")
	// The file exists before the server starts, as kube-apiserver needs;
	// each run below finds its tokens there.
	all := append(names(leases, MaxLeaseName), names(nodes, RateNodeName)...)
	if _, err := EnsureNodeTokens(tokenFile, append(all, names(agents, FleetNodeName)...)); err != nil {
		t.Fatal(err)
	}
	kubeconfig := startServeProcess(t, bin, "--token-auth-file", tokenFile)
	base, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := kubernetes.NewForConfig(base)
	if err != nil {
		t.Fatal(err)
	}
	nodeClients := func(t *testing.T, kind string) *Clients {
		tokens, err := EnsureNodeTokens(tokenFile, nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewNodeClients(base, kind, ContentTypeProtobuf, 2, tokens)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	ctx := context.Background()

	forEachKind(t, func(t *testing.T, kind string) {
		cfg := Config{Namespace: corev1.NamespaceNodeLease, Clients: 3, Leases: leases, Duration: time.Second}
		res, err := RunMax(ctx, cfg, nodeClients(t, kind).Factory())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s", res)
		if res.Ops < leases || res.ErrorsTotal != 0 {
			t.Fatalf("want every lease renewed as its node, without errors: %s", res)
		}
	})

	t.Run("register-nodes", func(t *testing.T) {
		cfg := Config{Namespace: corev1.NamespaceNodeLease, RegisterNodes: true, Clients: 2, Nodes: nodes, Interval: 300 * time.Millisecond, Duration: time.Second}
		res, err := RunRate(ctx, cfg, nodeClients(t, ClientLean).Factory())
		if err != nil {
			t.Fatal(err)
		}
		if res.Ops < nodes || res.ErrorsTotal != 0 {
			t.Fatalf("want every node registered and renewed as itself, without errors: %s", res)
		}
		for i := range nodes {
			name := RateNodeName(i)
			node, err := admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if node.Labels[FleetLabel] != "true" || !nodeReady(node) {
				t.Errorf("node %s not labelled and Ready: %v %+v", name, node.Labels, node.Status.Conditions)
			}
		}
	})

	t.Run("fleet", func(t *testing.T) {
		tokens, err := EnsureNodeTokens(tokenFile, nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Nodes: agents, Clients: 1, LeaseDurationSeconds: 8, NodeStatusUpdateFrequency: 4 * time.Second,
			Ramp: 300 * time.Millisecond, Duration: 3 * time.Second, NodeTokens: tokens}
		w, err := NewFleetWorkload(cfg, base)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(ctx, w.cfg, w)
		if err != nil {
			t.Fatal(err)
		}
		if res.ErrorsTotal != 0 || len(w.AgentLog()) != 0 {
			t.Fatalf("agents running as their nodes failed: %s; agent log %v", res, w.AgentLog())
		}
	})

	t.Run("another-nodes-lease", func(t *testing.T) {
		clients := nodeClients(t, ClientLean)
		client, _ := clients.Factory()(0)
		tokens := nodeTokensOf(client)
		intruder, err := tokens.authorization(RateNodeName(0))
		if err != nil {
			t.Fatal(err)
		}
		leases := leaseAPIFor(client, corev1.NamespaceNodeLease)
		victim := MaxLeaseName(0)
		if _, err := leases.Get(ctx, intruder, victim); !apierrors.IsForbidden(err) {
			t.Fatalf("node %s read node %s's lease: got %v, want 403", RateNodeName(0), victim, err)
		}
		own, err := tokens.authorization(victim)
		if err != nil {
			t.Fatal(err)
		}
		lease, err := leases.Get(ctx, own, victim)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := leases.Update(ctx, intruder, lease); !apierrors.IsForbidden(err) {
			t.Fatalf("node %s renewed node %s's lease: got %v, want 403", RateNodeName(0), victim, err)
		}
	})
}
