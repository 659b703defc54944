package agent

// End-to-end tests against a real API server. By default each test starts
// its own leasehold server in process (servertest.Start: real TLS on
// 127.0.0.1, a fresh data dir). LEASEHOLD_TEST_KUBECONFIG overrides that with
// any running server (leasehold serve, or a Kubernetes cluster you may write
// Nodes to), for example:
//
//	LEASEHOLD_TEST_KUBECONFIG=leasehold-data/admin.kubeconfig go test -run E2E -v ./internal/agent/
//
// Each test uses its own node name and deletes its Node and Lease at the end,
// so a shared external server is left as it was found.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/connrotation"
	"k8s.io/utils/clock"

	"github.com/leasehold/leasehold/internal/server/servertest"
	"github.com/leasehold/leasehold/internal/testdeps"
)

const e2eKubeconfigEnv = "LEASEHOLD_TEST_KUBECONFIG"

// e2eTimings keep the tests short: a 8 s lease renewed every 2 s, status
// computed every 2 s and reported every 6 s.
func e2eConfig(node string) Config {
	cfg := DefaultConfig(node)
	cfg.LeaseDurationSeconds = 8
	cfg.NodeStatusUpdateFrequency = 2 * time.Second
	cfg.NodeStatusReportFrequency = 6 * time.Second
	cfg.Version = "leasehold-e2e"
	cfg.NodeLabels = map[string]string{"leasehold.test/e2e": "true"}
	return cfg
}

// e2eEnv is a checking client on the server under test.
type e2eEnv struct {
	restConfig *rest.Config
	client     kubernetes.Interface
}

func newE2EEnv(t *testing.T) *e2eEnv {
	t.Helper()
	path := os.Getenv(e2eKubeconfigEnv)
	if path == "" {
		// No external server named: run against our own, started for this
		// test and stopped when it ends.
		path = servertest.Start(t).Kubeconfig
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("load kubeconfig %s: %v", path, err)
	}
	rc.UserAgent = "leasehold-agent-e2e"
	// The checking client dials through its own tracker so that the test can
	// close its pooled connections, and their goroutines, at the end.
	conns := connrotation.NewDialer((&net.Dialer{Timeout: 10 * time.Second}).DialContext)
	t.Cleanup(conns.CloseAll)
	checkConfig := rest.CopyConfig(rc)
	checkConfig.Dial = conns.DialContext
	client, err := kubernetes.NewForConfig(checkConfig)
	if err != nil {
		t.Fatal(err)
	}
	return &e2eEnv{restConfig: rc, client: client}
}

func e2eNodeName(prefix string) string {
	return fmt.Sprintf("leasehold-e2e-%s-%08x", prefix, rand.Uint32())
}

// cleanupNode deletes the test's Node and Lease when the test ends.
func (e *e2eEnv) cleanupNode(t *testing.T, node string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.client.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: delete node %s: %v", node, err)
		}
		if err := e.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, node, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: delete lease %s: %v", node, err)
		}
	})
}

// lockedBuffer collects an agent's log lines for assertions.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// runningAgent is an agent started by a test; stop ends it and checks that
// Run returned nil promptly.
type runningAgent struct {
	logs *lockedBuffer
	stop func()
}

// startAgent runs an agent for cfg the way the command does: protobuf,
// separate heartbeat client, idle connections closed on repeated failure.
func (e *e2eEnv) startAgent(t *testing.T, cfg Config) *runningAgent {
	t.Helper()
	rc := rest.CopyConfig(e.restConfig)
	rc.UserAgent = "leasehold-agent-e2e"
	UseProtobuf(rc)
	clients, err := NewClients(rc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.OnRepeatedHeartbeatFailure = clients.CloseHeartbeatConnections
	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a, err := New(clients.Client, clients.Heartbeat, cfg, clock.RealClock{}, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("agent Run returned %v, want nil", err)
				}
			case <-time.After(15 * time.Second):
				t.Errorf("agent did not stop within 15s of cancel")
			}
			clients.Close()
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("agent %s logs:\n%s", cfg.NodeName, logs.String())
		}
	})
	return &runningAgent{logs: logs, stop: stop}
}

func (e *e2eEnv) getLease(ctx context.Context, name string) (*coordinationv1.Lease, error) {
	return e.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
}

// waitOwnedLease waits until the node's lease exists and is owned by the
// Node with uid nodeUID.
func (e *e2eEnv) waitOwnedLease(t *testing.T, name string, nodeUID types.UID, timeout time.Duration) *coordinationv1.Lease {
	t.Helper()
	var lease *coordinationv1.Lease
	testdeps.Eventually(t, timeout, 100*time.Millisecond, "lease "+name+" owned by node uid "+string(nodeUID), func(ctx context.Context) error {
		l, err := e.getLease(ctx, name)
		if err != nil {
			return err
		}
		if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != nodeUID {
			return fmt.Errorf("ownerReferences = %+v", l.OwnerReferences)
		}
		lease = l
		return nil
	})
	return lease
}

// waitReadyNode waits until the Node exists with Ready=True from the agent.
func (e *e2eEnv) waitReadyNode(t *testing.T, name string, timeout time.Duration) *corev1.Node {
	t.Helper()
	var node *corev1.Node
	testdeps.Eventually(t, timeout, 100*time.Millisecond, "node "+name+" Ready", func(ctx context.Context) error {
		n, err := e.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := findCondition(n.Status.Conditions, corev1.NodeReady)
		if c == nil || c.Status != corev1.ConditionTrue {
			return fmt.Errorf("Ready condition = %+v", c)
		}
		node = n
		return nil
	})
	return node
}

// logMark is a position in an agent's log, so a test can look only at what
// was logged after some event.
func (a *runningAgent) logMark() int { return len(a.logs.String()) }

// waitLog waits until the agent logs line after mark.
func waitLog(t *testing.T, a *runningAgent, mark int, timeout time.Duration, line string) {
	t.Helper()
	testdeps.Eventually(t, timeout, 100*time.Millisecond, "agent logs "+line, func(context.Context) error {
		if strings.Contains(a.logs.String()[mark:], line) {
			return nil
		}
		return errors.New("not logged yet")
	})
}

// TestE2ENodeHeartbeat is scenario 1: the agent registers its Node and
// creates and renews its lease with the kubelet's fields.
func TestE2ENodeHeartbeat(t *testing.T) {
	t.Parallel()
	e := newE2EEnv(t)
	name := e2eNodeName("hb")
	e.cleanupNode(t, name)
	cfg := e2eConfig(name)
	agent := e.startAgent(t, cfg)

	node := e.waitReadyNode(t, name, 20*time.Second)
	for k, v := range map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": defaultNodeLabels(name)["kubernetes.io/os"], "leasehold.test/e2e": "true"} {
		if node.Labels[k] != v {
			t.Errorf("node label %s = %q, want %q", k, node.Labels[k], v)
		}
	}
	if node.Status.NodeInfo.KubeletVersion != "leasehold-e2e" {
		t.Errorf("kubeletVersion = %q", node.Status.NodeInfo.KubeletVersion)
	}
	ready := findCondition(node.Status.Conditions, corev1.NodeReady)
	if ready.Reason != "KubeletReady" || ready.Message != "kubelet is posting ready status" || ready.LastHeartbeatTime.IsZero() || ready.LastTransitionTime.IsZero() {
		t.Errorf("Ready condition = %+v", ready)
	}

	lease := e.waitOwnedLease(t, name, node.UID, 20*time.Second)
	ref := lease.OwnerReferences[0]
	if ref.APIVersion != "v1" || ref.Kind != "Node" || ref.Name != name || ref.Controller != nil || ref.BlockOwnerDeletion != nil {
		t.Errorf("ownerReference = %+v, want {v1 Node %s uid} without controller/blockOwnerDeletion", ref, name)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != name {
		t.Errorf("holderIdentity = %v, want %s", lease.Spec.HolderIdentity, name)
	}
	if lease.Spec.LeaseDurationSeconds == nil || *lease.Spec.LeaseDurationSeconds != cfg.LeaseDurationSeconds {
		t.Errorf("leaseDurationSeconds = %v, want %d", lease.Spec.LeaseDurationSeconds, cfg.LeaseDurationSeconds)
	}
	if lease.Spec.AcquireTime != nil || lease.Spec.LeaseTransitions != nil {
		t.Errorf("agent set acquireTime/leaseTransitions: %+v", lease.Spec)
	}
	if lease.Spec.RenewTime == nil {
		t.Fatal("lease has no renewTime")
	}

	// Renewals: renewTime strictly increases, about every RenewInterval,
	// on the same object (no re-creation).
	first := lease.Spec.RenewTime.Time
	testdeps.Eventually(t, 3*cfg.RenewInterval()+5*time.Second, 100*time.Millisecond, "renewTime moves forward", func(ctx context.Context) error {
		l, err := e.getLease(ctx, name)
		if err != nil {
			return err
		}
		if l.UID != lease.UID {
			return fmt.Errorf("lease re-created: uid %s -> %s", lease.UID, l.UID)
		}
		if !l.Spec.RenewTime.Time.After(first) {
			return fmt.Errorf("renewTime still %v", l.Spec.RenewTime)
		}
		if gap := l.Spec.RenewTime.Time.Sub(first); gap < cfg.RenewInterval()*9/10 {
			return fmt.Errorf("renewed after %s, faster than the %s interval", gap, cfg.RenewInterval())
		}
		return nil
	})
	agent.stop()
	// The lease loop may run before registration has created the Node and
	// then skips creating an ownerless lease (as the kubelet does); any other
	// error in a healthy run is a bug.
	for line := range strings.Lines(agent.logs.String()) {
		if strings.Contains(line, "level=ERROR") && !strings.Contains(line, "Failed to get node when trying to set owner ref to the node lease") {
			t.Errorf("healthy run logged an error: %s", line)
		}
	}
}

// TestE2ELeaseDeletedIsRecreated: deleting only the lease makes the next
// renewal PUT fail with 409 (its uid precondition names the deleted
// object, exactly as kube-apiserver answers), which sends the agent, like
// the kubelet, to GET (404) and create a new lease with a new uid, owned by
// the same Node, inside the same update routine.
func TestE2ELeaseDeletedIsRecreated(t *testing.T) {
	t.Parallel()
	e := newE2EEnv(t)
	name := e2eNodeName("lease")
	e.cleanupNode(t, name)
	cfg := e2eConfig(name)
	agent := e.startAgent(t, cfg)
	node := e.waitReadyNode(t, name, 20*time.Second)
	old := e.waitOwnedLease(t, name, node.UID, 20*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mark := agent.logMark()
	if err := e.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete lease: %v", err)
	}
	testdeps.Eventually(t, 3*cfg.RenewInterval()+5*time.Second, 100*time.Millisecond, "lease re-created", func(ctx context.Context) error {
		l, err := e.getLease(ctx, name)
		if err != nil {
			return err
		}
		if l.UID == old.UID {
			return errors.New("still the old lease")
		}
		if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != node.UID {
			return fmt.Errorf("new lease ownerReferences = %+v", l.OwnerReferences)
		}
		return nil
	})
	waitLog(t, agent, mark, time.Second, `msg="Failed to update lease"`)
	waitLog(t, agent, mark, time.Second, `msg="Created node lease"`)
}

// TestE2ENodeDeletedThenReregistered is scenario 3: after kubectl delete
// node (and the garbage collector deleting the lease) the running agent
// keeps going, logs like the kubelet, and creates no ownerless lease; a
// restarted agent registers a new Node and a new owned lease.
func TestE2ENodeDeletedThenReregistered(t *testing.T) {
	t.Parallel()
	e := newE2EEnv(t)
	name := e2eNodeName("del")
	e.cleanupNode(t, name)
	cfg := e2eConfig(name)
	first := e.startAgent(t, cfg)
	oldNode := e.waitReadyNode(t, name, 20*time.Second)
	oldLease := e.waitOwnedLease(t, name, oldNode.UID, 20*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	background := metav1.DeletePropagationBackground
	mark := first.logMark()
	if err := e.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatalf("delete node: %v", err)
	}
	testdeps.Eventually(t, 10*time.Second, 100*time.Millisecond, "node gone", func(ctx context.Context) error {
		_, err := e.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("node GET: %v", err)
	})
	// Stand in for the garbage collector if the server has none; with one,
	// the lease may already be gone.
	if err := e.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("delete lease: %v", err)
	}

	waitLog(t, first, mark, 3*cfg.RenewInterval()+5*time.Second, "Failed to get node when trying to set owner ref to the node lease")
	waitLog(t, first, mark, 2*cfg.NodeStatusUpdateFrequency+10*time.Second, "Error updating node status, will retry")
	waitLog(t, first, mark, 10*time.Second, "update node status exceeds retry count")
	// While the Node is gone the agent neither re-registers nor creates a
	// lease the garbage collector could not tie to an owner.
	time.Sleep(2 * cfg.RenewInterval())
	if _, err := e.getLease(ctx, name); !apierrors.IsNotFound(err) {
		t.Fatalf("lease while node deleted: err = %v, want NotFound", err)
	}
	if _, err := e.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("node re-registered by the running agent: err = %v, want NotFound", err)
	}
	first.stop()

	// Restart: a new Node (new uid) and a new lease owned by it.
	e.startAgent(t, cfg)
	newNode := e.waitReadyNode(t, name, 20*time.Second)
	if newNode.UID == oldNode.UID {
		t.Fatalf("node uid unchanged after re-registration: %s", newNode.UID)
	}
	newLease := e.waitOwnedLease(t, name, newNode.UID, 20*time.Second)
	if newLease.UID == oldLease.UID {
		t.Fatalf("lease uid unchanged after re-registration: %s", newLease.UID)
	}
}

// TestE2EExistingNodeIsReused: an agent that finds its Node registered
// (a restart) keeps it, forces the well-known labels back, reports Ready
// and owns its lease by that Node's uid.
func TestE2EExistingNodeIsReused(t *testing.T) {
	t.Parallel()
	e := newE2EEnv(t)
	name := e2eNodeName("reuse")
	e.cleanupNode(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pre, err := e.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   name,
		Labels: map[string]string{"kubernetes.io/hostname": "stale", "team": "a"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("pre-create node: %v", err)
	}
	cfg := e2eConfig(name)
	e.startAgent(t, cfg)
	node := e.waitReadyNode(t, name, 20*time.Second)
	if node.UID != pre.UID {
		t.Fatalf("node uid %s, want the pre-existing %s", node.UID, pre.UID)
	}
	testdeps.Eventually(t, 10*time.Second, 100*time.Millisecond, "hostname label fixed", func(ctx context.Context) error {
		n, err := e.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n.Labels["kubernetes.io/hostname"] != name || n.Labels["team"] != "a" {
			return fmt.Errorf("labels = %v", n.Labels)
		}
		return nil
	})
	e.waitOwnedLease(t, name, pre.UID, 20*time.Second)
}

// TestE2EStatusReadsPastAStaleCache: right after registering, the status
// loop's cached read (resourceVersion "0") may come from a server cache
// that has not seen the new Node yet, and answers NotFound. That is not an
// error: the agent reads the latest at once and reports its status without
// logging a failure. The stale answer is injected on the agent's transport,
// in front of the real server, so the race happens every run.
func TestE2EStatusReadsPastAStaleCache(t *testing.T) {
	t.Parallel()
	e := newE2EEnv(t)
	name := e2eNodeName("stale")
	e.cleanupNode(t, name)
	stale := &staleNodeRead{node: name}
	e.restConfig = rest.CopyConfig(e.restConfig)
	// Both of the agent's clients (main and heartbeat) get a wrapper.
	e.restConfig.Wrap(func(rt http.RoundTripper) http.RoundTripper { return staleTransport{stale, rt} })
	agent := e.startAgent(t, e2eConfig(name))
	// The Node may be created Ready already, so Ready alone does not show
	// that the status loop got past the stale read: wait for the injection,
	// then for a heartbeat written after it.
	testdeps.Eventually(t, 20*time.Second, 50*time.Millisecond, "a stale NotFound injected", func(context.Context) error {
		if stale.injected.Load() == 0 {
			return errors.New("the status loop has not read the Node from cache yet")
		}
		return nil
	})
	injectedAt := time.Now().Truncate(time.Second)
	testdeps.Eventually(t, 20*time.Second, 100*time.Millisecond, "a heartbeat after the stale read", func(ctx context.Context) error {
		n, err := e.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := findCondition(n.Status.Conditions, corev1.NodeReady)
		if c == nil || c.Status != corev1.ConditionTrue || c.LastHeartbeatTime.Time.Before(injectedAt) {
			return fmt.Errorf("Ready condition = %+v", c)
		}
		return nil
	})
	agent.stop()
	if n := stale.injected.Load(); n != 1 {
		t.Fatalf("stale NotFound answers injected: %d, want 1", n)
	}
	for line := range strings.Lines(agent.logs.String()) {
		if strings.Contains(line, "level=ERROR") && !strings.Contains(line, "Failed to get node when trying to set owner ref to the node lease") {
			t.Errorf("a stale cached read logged an error: %s", line)
		}
	}
}

// staleNodeRead answers the first cached GET of node after its registration
// with the NotFound a lagging server cache gives.
type staleNodeRead struct {
	node       string
	registered atomic.Bool
	injected   atomic.Int32
}

// staleTransport is one client's transport with staleNodeRead in front.
type staleTransport struct {
	*staleNodeRead
	next http.RoundTripper
}

func (s staleTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && r.URL.Path == "/api/v1/nodes/"+s.node && r.URL.Query().Get("resourceVersion") == "0" &&
		s.registered.Load() && s.injected.CompareAndSwap(0, 1) {
		body := fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"nodes %q not found","reason":"NotFound","details":{"name":%q,"kind":"nodes"},"code":404}`, s.node, s.node)
		return &http.Response{
			StatusCode: http.StatusNotFound,
			Header:     http.Header{"Content-Type": []string{"application/json"}},
			Body:       io.NopCloser(strings.NewReader(body)),
			Request:    r,
		}, nil
	}
	resp, err := s.next.RoundTrip(r)
	if err == nil && r.Method == http.MethodPost && r.URL.Path == "/api/v1/nodes" && resp.StatusCode == http.StatusCreated {
		s.registered.Store(true)
	}
	return resp, err
}
