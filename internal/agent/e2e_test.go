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
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/leasehold/leasehold/internal/server/servertest"
	"github.com/leasehold/leasehold/internal/testdeps"
	"github.com/leasehold/leasehold/internal/testdeps/nodeenv"
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

// e2eEnv is the node harness on the server under test.
type e2eEnv struct {
	*nodeenv.Env
}

// newE2EEnv is the harness on the server LEASEHOLD_TEST_KUBECONFIG names,
// or else on a server started for this test and stopped when it ends.
func newE2EEnv(t *testing.T) *e2eEnv {
	t.Helper()
	path := os.Getenv(e2eKubeconfigEnv)
	if path == "" {
		path = servertest.Start(t).Kubeconfig
	}
	return &e2eEnv{nodeenv.New(t, path, "leasehold-agent-e2e")}
}

// newNode is a node name for one test, whose Node and Lease are deleted
// when the test ends.
func (e *e2eEnv) newNode(prefix string) string {
	name := nodeenv.Names(prefix, 1)[0]
	e.DeleteAtEnd(name)
	return name
}

// runningAgent is an agent started by a test; stop ends it and checks that
// Run returned nil promptly.
type runningAgent struct {
	logs *testdeps.Lines
	stop func()
}

// startAgent runs an agent for cfg the way the command does: protobuf,
// separate heartbeat client, idle connections closed on repeated failure.
func (e *e2eEnv) startAgent(t *testing.T, cfg Config) *runningAgent {
	t.Helper()
	rc := rest.CopyConfig(e.Config)
	UseProtobuf(rc)
	clients, err := NewClients(rc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.OnRepeatedHeartbeatFailure = clients.CloseHeartbeatConnections
	logs := &testdeps.Lines{}
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

// checkNoErrors fails t for every ERROR line the agent logged but one: the
// lease loop may run before registration has created the Node and then
// skips creating an ownerless lease (as the kubelet does); any other error
// in a healthy run is a bug.
func (a *runningAgent) checkNoErrors(t *testing.T, what string) {
	t.Helper()
	for line := range strings.Lines(a.logs.String()) {
		if strings.Contains(line, "level=ERROR") && !strings.Contains(line, "Failed to get node when trying to set owner ref to the node lease") {
			t.Errorf("%s logged an error: %s", what, line)
		}
	}
}

// TestE2ENodeHeartbeat is scenario 1: the agent registers its Node and
// creates and renews its lease with the kubelet's fields.
func TestE2ENodeHeartbeat(t *testing.T) {
	t.Parallel()
	e := newE2EEnv(t)
	name := e.newNode("hb")
	cfg := e2eConfig(name)
	agent := e.startAgent(t, cfg)

	node := e.WaitReady(name, 20*time.Second)
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

	lease := e.WaitOwnedLease(name, node.UID, 20*time.Second)
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
	e.WaitRenewed(name, lease.UID, lease.Spec.RenewTime.Time, cfg.RenewInterval(), 3*cfg.RenewInterval()+5*time.Second)
	agent.stop()
	agent.checkNoErrors(t, "a healthy run")
}

// TestE2ELeaseDeletedIsRecreated: deleting only the lease makes the next
// renewal PUT fail with 409 (its uid precondition names the deleted
// object, exactly as kube-apiserver answers), which sends the agent, like
// the kubelet, to GET (404) and create a new lease with a new uid, owned by
// the same Node, inside the same update routine.
func TestE2ELeaseDeletedIsRecreated(t *testing.T) {
	t.Parallel()
	e := newE2EEnv(t)
	name := e.newNode("lease")
	cfg := e2eConfig(name)
	agent := e.startAgent(t, cfg)
	node, old := e.WaitRegistered(name, 20*time.Second, 20*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mark := agent.logs.Mark()
	if err := e.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete lease: %v", err)
	}
	testdeps.Eventually(t, 3*cfg.RenewInterval()+5*time.Second, 100*time.Millisecond, "lease re-created", func() error {
		l, err := e.Lease(name)
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
	agent.logs.WaitLine(t, mark, time.Second, `msg="Failed to update lease"`)
	agent.logs.WaitLine(t, mark, time.Second, `msg="Created node lease"`)
}

// TestE2ENodeDeletedThenReregistered is scenario 3: after kubectl delete
// node (and the garbage collector deleting the lease) the running agent
// keeps going, logs like the kubelet, and creates no ownerless lease; a
// restarted agent registers a new Node and a new owned lease.
func TestE2ENodeDeletedThenReregistered(t *testing.T) {
	t.Parallel()
	e := newE2EEnv(t)
	name := e.newNode("del")
	cfg := e2eConfig(name)
	first := e.startAgent(t, cfg)
	oldNode, oldLease := e.WaitRegistered(name, 20*time.Second, 20*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	background := metav1.DeletePropagationBackground
	mark := first.logs.Mark()
	if err := e.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatalf("delete node: %v", err)
	}
	e.WaitNodeGone(name, 10*time.Second)
	// Stand in for the garbage collector if the server has none; with one,
	// the lease may already be gone.
	if err := e.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("delete lease: %v", err)
	}

	first.logs.WaitLine(t, mark, 3*cfg.RenewInterval()+5*time.Second, "Failed to get node when trying to set owner ref to the node lease")
	first.logs.WaitLine(t, mark, 2*cfg.NodeStatusUpdateFrequency+10*time.Second, "Error updating node status, will retry")
	first.logs.WaitLine(t, mark, 10*time.Second, "update node status exceeds retry count")
	// While the Node is gone the agent neither re-registers nor creates a
	// lease the garbage collector could not tie to an owner.
	time.Sleep(2 * cfg.RenewInterval())
	if _, err := e.Lease(name); !apierrors.IsNotFound(err) {
		t.Fatalf("lease while node deleted: err = %v, want NotFound", err)
	}
	if _, err := e.Node(name); !apierrors.IsNotFound(err) {
		t.Fatalf("node re-registered by the running agent: err = %v, want NotFound", err)
	}
	first.stop()

	// Restart: a new Node (new uid) and a new lease owned by it.
	e.startAgent(t, cfg)
	newNode := e.WaitReady(name, 20*time.Second)
	if newNode.UID == oldNode.UID {
		t.Fatalf("node uid unchanged after re-registration: %s", newNode.UID)
	}
	newLease := e.WaitOwnedLease(name, newNode.UID, 20*time.Second)
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
	name := e.newNode("reuse")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pre, err := e.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   name,
		Labels: map[string]string{"kubernetes.io/hostname": "stale", "team": "a"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("pre-create node: %v", err)
	}
	cfg := e2eConfig(name)
	e.startAgent(t, cfg)
	node := e.WaitReady(name, 20*time.Second)
	if node.UID != pre.UID {
		t.Fatalf("node uid %s, want the pre-existing %s", node.UID, pre.UID)
	}
	testdeps.Eventually(t, 10*time.Second, 100*time.Millisecond, "hostname label fixed", func() error {
		n, err := e.Node(name)
		if err != nil {
			return err
		}
		if n.Labels["kubernetes.io/hostname"] != name || n.Labels["team"] != "a" {
			return fmt.Errorf("labels = %v", n.Labels)
		}
		return nil
	})
	e.WaitOwnedLease(name, pre.UID, 20*time.Second)
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
	name := e.newNode("stale")
	stale := &staleNodeRead{node: name}
	e.Config = rest.CopyConfig(e.Config)
	// Both of the agent's clients (main and heartbeat) get a wrapper.
	e.Config.Wrap(func(rt http.RoundTripper) http.RoundTripper { return staleTransport{stale, rt} })
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
	testdeps.Eventually(t, 20*time.Second, 100*time.Millisecond, "a heartbeat after the stale read", func() error {
		n, err := e.Node(name)
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
	agent.checkNoErrors(t, "a stale cached read")
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

// TestE2EStopDuringARenewalLogsNoError: an agent stopped while a lease
// renewal is in flight cancels it, and that is no failure to report: the
// run logs no error (CI once saw "Failed to update lease ... context
// canceled" when a test stopped a healthy agent mid-renewal). The renewal
// is held on the agent's transport until its context ends, so the stop
// lands mid-request every run.
func TestE2EStopDuringARenewalLogsNoError(t *testing.T) {
	t.Parallel()
	e := newE2EEnv(t)
	name := e.newNode("stop")
	held := make(chan struct{})
	var once sync.Once
	e.Config = rest.CopyConfig(e.Config)
	e.Config.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/leases/"+name) {
				once.Do(func() { close(held) })
				<-r.Context().Done()
				return nil, r.Context().Err()
			}
			return rt.RoundTrip(r)
		})
	})
	agent := e.startAgent(t, e2eConfig(name))
	select {
	case <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("the agent sent no lease renewal within 20 s")
	}
	agent.stop()
	agent.checkNoErrors(t, "a stop during a renewal")
}

// roundTripFunc is a function as an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
