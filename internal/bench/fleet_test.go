package bench

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// syncBuffer is a bytes.Buffer safe for the fleet's many goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestE2EFleetRegistersAndRenewsEveryNode runs 50 real agents with an 8 s
// lease (a renewal every 2 s) against a real server: every node is
// registered with its lease, every lease is renewed at least twice, and
// nothing failed, neither a renewal nor anything the agents logged.
func TestE2EFleetRegistersAndRenewsEveryNode(t *testing.T) {
	const nodes = 50
	base := serverConfig(t)
	out := &syncBuffer{}
	cfg := Config{
		Nodes:   nodes,
		Clients: 2,
		// The heartbeat timeout is min(status frequency, lease duration):
		// 4 s, so a CI machine busy with other tests' fsyncs does not turn a
		// slow renewal into a failed one.
		LeaseDurationSeconds:      8,
		NodeStatusUpdateFrequency: 4 * time.Second,
		Ramp:                      500 * time.Millisecond,
		Duration:                  8 * time.Second,
		Progress:                  out,
		Logger:                    slog.New(slog.NewTextHandler(out, nil)),
	}
	w, err := NewFleetWorkload(cfg, base)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	res, err := Run(context.Background(), w.cfg, w)
	t.Logf("output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", res)
	if res.ErrorsTotal != 0 {
		t.Fatalf("renewal errors: %s", res)
	}
	if log := w.AgentLog(); len(log) != 0 {
		t.Fatalf("agents logged warnings or errors: %v", log)
	}
	// 50 nodes renewing every ~2 s (plus latency and jitter) for 8 s.
	if res.Ops < 2*nodes || res.P99Ms <= 0 {
		t.Fatalf("%d renewals measured (p99 %.2fms), want at least two per node", res.Ops, res.P99Ms)
	}
	for i, n := range w.Renewals() {
		if n < 2 {
			t.Errorf("node %s renewed %d times, want at least 2", FleetNodeName(i), n)
		}
	}
	if !strings.Contains(out.String(), "all 50 nodes registered and renewing") {
		t.Errorf("no setup summary in the progress output")
	}

	// What the server holds: every Node, labelled, and its lease held by
	// it, owned by it and renewed during the run.
	checkClients, err := NewClients(base, ContentTypeJSON, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(checkClients.Close)
	check, _ := checkClients.Factory()(0)
	ctx := context.Background()
	list, err := check.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: FleetLabel + "=true"})
	if err != nil {
		t.Fatal(err)
	}
	uids := map[string]string{}
	for _, n := range list.Items {
		uids[n.Name] = string(n.UID)
	}
	for i := range nodes {
		name := FleetNodeName(i)
		uid, ok := uids[name]
		if !ok {
			t.Errorf("node %s not registered", name)
			continue
		}
		lease, err := check.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("lease of %s: %v", name, err)
			continue
		}
		switch {
		case lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != name:
			t.Errorf("lease %s holder %v", name, lease.Spec.HolderIdentity)
		case len(lease.OwnerReferences) != 1 || string(lease.OwnerReferences[0].UID) != uid:
			t.Errorf("lease %s owners %+v, want node uid %s", name, lease.OwnerReferences, uid)
		case lease.Spec.RenewTime == nil || !lease.Spec.RenewTime.After(before):
			t.Errorf("lease %s not renewed during the run: %v", name, lease.Spec.RenewTime)
		}
	}
	if t.Failed() {
		return
	}
	// The agents are stopped by the time Run returned: nothing renews now.
	stopped := w.Renewals()
	time.Sleep(time.Second)
	for i, n := range w.Renewals() {
		if n != stopped[i] {
			t.Fatalf("node %s still renewing after Run returned", FleetNodeName(i))
		}
	}
}

func TestNewFleetWorkloadValidates(t *testing.T) {
	// Building the workload does not talk to the server.
	base := &rest.Config{Host: "https://127.0.0.1:1"}
	good := Config{Nodes: 10, Clients: 1, Duration: time.Second}
	if _, err := NewFleetWorkload(good, base); err != nil {
		t.Fatalf("valid fleet config refused: %v", err)
	}
	for name, mutate := range map[string]func(*Config){
		"no nodes":       func(c *Config) { c.Nodes = 0 },
		"no connections": func(c *Config) { c.Clients = 0 },
		"negative ramp":  func(c *Config) { c.Ramp = -time.Second },
		"no duration":    func(c *Config) { c.Duration = 0 },
		"negative lease": func(c *Config) { c.LeaseDurationSeconds = -1 },
	} {
		t.Run(name, func(t *testing.T) {
			c := good
			mutate(&c)
			if _, err := NewFleetWorkload(c, base); err == nil {
				t.Fatalf("config %+v accepted", c)
			}
		})
	}
	if _, err := NewFleetWorkload(good, nil); err == nil {
		t.Fatal("nil REST config accepted")
	}
}
