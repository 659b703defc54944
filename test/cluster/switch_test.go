package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/bench"
	"github.com/leasehold/leasehold/internal/testdeps"
	"github.com/leasehold/leasehold/internal/testdeps/kubecluster"
)

// benchLeases is how many leases the load generator renews through
// kube-apiserver, once a second each, while the route switches.
const benchLeases = 200

// TestSwitchOnAndOffUnderLoad switches a live cluster's leases onto
// Leasehold and back, as docs/take-lease-load-off-etcd.md does, while agents renew
// their node leases, kube-controller-manager holds its election and a
// load generator renews 200 more leases every second, all through
// kube-apiserver: no controller loses leadership, no node leaves Ready,
// and no renewal fails beyond one retry per lease and switch (the 409 a
// client whose cached resourceVersion came from the other store gets).
func TestSwitchOnAndOffUnderLoad(t *testing.T) {
	kc := kubecluster.Start(t, kubecluster.Options{ControllerManager: true})
	ctx := context.Background()
	b := startLeaseholdFor(t, kc, true)
	agents := map[string]*proc{"node-a": b.agent("node-a"), "node-b": b.agent("node-b")}
	for name := range agents {
		testdeps.Eventually(t, 60*time.Second, 200*time.Millisecond, "node "+name+" Ready", func() error { return nodeReady(ctx, b.viaCluster, name, corev1.ConditionTrue) })
	}
	kcmHolder := kc.WaitControllerManagerLeader(t, 90*time.Second)
	kcmBefore := leaseState(t, b, "kube-system", "kube-controller-manager")

	watch := watchNodesReady(t, b, []string{"node-a", "node-b"})
	benchOut := startLoad(t, kc)

	// Switch on: mirror the cluster's leases into Leasehold until the
	// APIService points at it, then mirror Leasehold's back into the
	// cluster's etcd for the watches still open on the built-in storage.
	on := startProc(t, "copy-on", "leases", "copy", "--from-kubeconfig", kc.AdminKubeconfig, "--to-kubeconfig", b.adminKubeconfig(), "--follow")
	testdeps.Eventually(t, 60*time.Second, 200*time.Millisecond, "Leasehold holds a copy of every lease", func() error {
		for _, ns := range []string{nodeLeaseNS, "kube-system", "bench"} {
			l, err := b.direct.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			if ns == "bench" && len(l.Items) < benchLeases || len(l.Items) == 0 {
				return fmt.Errorf("%d leases in %s", len(l.Items), ns)
			}
		}
		return nil
	})
	b.route()
	_ = on.Stop()
	back := startProc(t, "copy-back-to-etcd", "leases", "copy", "--from-kubeconfig", b.adminKubeconfig(), "--to-etcd-servers", kc.EtcdURL, "--follow")
	time.Sleep(25 * time.Second)
	if got := leaseState(t, b, "kube-system", "kube-controller-manager"); got.holder != kcmHolder {
		t.Errorf("after switching on, kube-controller-manager's lease is held by %q, was %q", got.holder, kcmHolder)
	}
	if l, err := b.direct.CoordinationV1().Leases(nodeLeaseNS).Get(ctx, "node-a", metav1.GetOptions{}); err != nil || time.Since(l.Spec.RenewTime.Time) > 5*time.Second {
		t.Errorf("after switching on, node-a renews in Leasehold: %+v, %v", l, err)
	}

	// Switch off: the mirror into etcd runs on until the APIService is
	// Local again; then Leasehold follows the cluster for the watches
	// still open on it.
	kc.RouteLocal(t)
	_ = back.Stop()
	off := startProc(t, "copy-off", "leases", "copy", "--from-kubeconfig", kc.AdminKubeconfig, "--to-kubeconfig", b.adminKubeconfig(), "--follow")
	time.Sleep(25 * time.Second)
	_ = off.Stop()

	res := stopLoad(t, benchOut)
	watch.stop()
	kcmAfter := leaseState(t, b, "kube-system", "kube-controller-manager")
	if kcmAfter.holder != kcmHolder || kcmAfter.transitions != kcmBefore.transitions {
		t.Errorf("kube-controller-manager's election changed: before %+v, after %+v", kcmBefore, kcmAfter)
	}
	if err := syscall.Kill(kc.ControllerManagerPID(), 0); err != nil {
		t.Errorf("kube-controller-manager exited (as it does on losing its lease): %v", err)
	}
	if bad := watch.notReady(); len(bad) > 0 {
		t.Errorf("nodes left Ready during the switches: %v", bad)
	}
	for name, a := range agents {
		// Each switch costs an agent at most one 409 (its cached lease's
		// uid and resourceVersion are the other store's), after which it
		// re-reads and renews, as a kubelet does.
		failed := 0
		for _, line := range strings.Split(a.Output(), "\n") {
			switch {
			case strings.Contains(line, "Failed to update lease"):
				failed++
				if !strings.Contains(line, "Operation cannot be fulfilled") {
					t.Errorf("agent %s: a renewal failed other than by a conflict: %s", name, line)
				}
			case strings.Contains(line, "Will retry updating lease"), strings.Contains(line, "Failed to ensure lease"), strings.Contains(line, "fallback to ensure lease"):
				t.Errorf("agent %s: a renewal failed beyond its retry: %s", name, line)
			}
		}
		if failed > 2 {
			t.Errorf("agent %s: %d conflicts over two switches, want at most one each:\n%s", name, failed, a.Tail(20))
		}
		if n := strings.Count(a.Output(), "Created node lease"); n != 1 {
			t.Errorf("agent %s created its lease %d times: a switch lost it", name, n)
		}
	}
	conflicts := res.Errors[bench.KindConflict]
	if res.ErrorsTotal != conflicts || conflicts > 2*benchLeases {
		t.Errorf("load generator's renewals failed beyond one retry per lease and switch: %d errors %v over %d renewals", res.ErrorsTotal, res.Errors, res.Ops)
	}
	t.Logf("switch on and off under load: %d renewals through kube-apiserver, %d conflicts (each retried), p99 %.1f ms, max %.1f ms; kube-controller-manager kept %q", res.Ops, conflicts, res.P99Ms, res.MaxMs, kcmHolder)
}

type leaseSnapshot struct {
	holder      string
	transitions int32
}

// leaseState reads a lease through kube-apiserver, wherever it is served
// from.
func leaseState(t testing.TB, b *behind, ns, name string) leaseSnapshot {
	t.Helper()
	var s leaseSnapshot
	testdeps.Eventually(t, 30*time.Second, 200*time.Millisecond, "read lease "+ns+"/"+name, func() error {
		l, err := b.viaCluster.CoordinationV1().Leases(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if l.Spec.HolderIdentity != nil {
			s.holder = *l.Spec.HolderIdentity
		}
		if l.Spec.LeaseTransitions != nil {
			s.transitions = *l.Spec.LeaseTransitions
		}
		return nil
	})
	return s
}

// nodeWatch polls the nodes' Ready condition every 500 ms and remembers
// every time one was not True.
type nodeWatch struct {
	mu   sync.Mutex
	bad  []string
	stop func()
}

func watchNodesReady(t testing.TB, b *behind, nodes []string) *nodeWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &nodeWatch{}
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for _, n := range nodes {
				if err := nodeReady(ctx, b.viaCluster, n, corev1.ConditionTrue); err != nil && ctx.Err() == nil {
					w.mu.Lock()
					w.bad = append(w.bad, fmt.Sprintf("%s %s: %v", time.Now().Format(time.TimeOnly), n, err))
					w.mu.Unlock()
				}
			}
		}
	})
	w.stop = func() { cancel(); wg.Wait() }
	t.Cleanup(w.stop)
	return w
}

func (w *nodeWatch) notReady() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.bad...)
}

// startLoad runs `leasehold bench rate` through kube-apiserver: 200
// leases renewed once a second, for longer than the test needs; stopLoad
// interrupts it and reads its result.
func startLoad(t *testing.T, kc *kubecluster.Cluster) *proc {
	t.Helper()
	return startProc(t, "bench", "bench", "rate", "--kubeconfig", kc.AdminKubeconfig, "--nodes", fmt.Sprint(benchLeases),
		"--interval", "1s", "--clients", "16", "--duration", "10m", "--output", "json")
}

func stopLoad(t testing.TB, p *proc) bench.Result {
	t.Helper()
	p.Signal(syscall.SIGINT)
	_ = p.Stop()
	return benchResult(t, p)
}

// benchResult reads the JSON result a finished bench printed last.
func benchResult(t testing.TB, p *proc) bench.Result {
	t.Helper()
	text := p.Output()
	i := strings.LastIndex(text, "\n{")
	if i < 0 {
		t.Fatalf("no JSON result from bench:\n%s", p.Tail(20))
	}
	var res bench.Result
	if err := json.NewDecoder(strings.NewReader(text[i+1:])).Decode(&res); err != nil {
		t.Fatalf("bench result: %v\n%s", err, p.Tail(20))
	}
	return res
}
