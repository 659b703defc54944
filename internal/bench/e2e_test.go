package bench

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/leasehold/leasehold/internal/server/servertest"
)

// The tests in this file drive a real server: the integrator points
// LEASEHOLD_TEST_KUBECONFIG at a running `leasehold serve` (any
// Kubernetes-compatible server works). They skip, saying so, without it.
const kubeconfigEnv = "LEASEHOLD_TEST_KUBECONFIG"

func serverConfig(t *testing.T) *rest.Config {
	t.Helper()
	path := os.Getenv(kubeconfigEnv)
	if path == "" {
		// No external server named: run against our own, in process.
		path = servertest.Start(t).Kubeconfig
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("loading %s: %v", path, err)
	}
	return cfg
}

// newTestClients builds typed clients and closes their connections when the test ends.
func newTestClients(t *testing.T, contentType string) *Clients {
	t.Helper()
	return newTestClientsOfKind(t, ClientTyped, contentType)
}

// newTestClientsOfKind builds clients of kind and closes their connections
// when the test ends.
func newTestClientsOfKind(t *testing.T, kind, contentType string) *Clients {
	t.Helper()
	clients, err := NewClientsOfKind(serverConfig(t), kind, contentType, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(clients.Close)
	return clients
}

func testNamespace(what string) string {
	return fmt.Sprintf("bench-e2e-%s-%d", what, time.Now().UnixNano()%1_000_000)
}

func TestE2EMaxRenewsEveryLease(t *testing.T) {
	for _, tc := range []struct {
		kind, ct string
		run      time.Duration
	}{
		{ClientTyped, ContentTypeJSON, 1500 * time.Millisecond},
		{ClientTyped, ContentTypeProtobuf, 1500 * time.Millisecond},
		{ClientLean, ContentTypeJSON, time.Second},
		{ClientLean, ContentTypeProtobuf, time.Second},
	} {
		t.Run(tc.kind+"-"+tc.ct, func(t *testing.T) {
			clients := newTestClientsOfKind(t, tc.kind, tc.ct)
			cfg := Config{Namespace: testNamespace("max-" + tc.kind + "-" + tc.ct), Clients: 4, Leases: 10, Duration: tc.run}
			before := time.Now()
			res, err := RunMax(context.Background(), cfg, clients.Factory())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s", res)
			if res.Ops < 10 || res.ErrorsTotal != 0 || res.P99Ms <= 0 {
				t.Fatalf("want at least one renewal per lease and no errors: %s", res)
			}
			// Every lease, including the last of the uneven partition, was renewed during the run.
			client, _ := clients.Factory()(0)
			list, err := client.CoordinationV1().Leases(cfg.Namespace).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != 10 {
				t.Fatalf("%d leases in %s, want 10", len(list.Items), cfg.Namespace)
			}
			for _, l := range list.Items {
				if l.Spec.RenewTime == nil || !l.Spec.RenewTime.After(before) || l.Spec.HolderIdentity == nil {
					t.Errorf("lease %s not renewed during the run: %+v", l.Name, l.Spec)
				}
				// Setup and renewals speak as one field manager, as a
				// kubelet does; two would measure the server's slow path.
				if len(l.ManagedFields) != 1 {
					t.Errorf("lease %s has %d managedFields entries, want 1: %+v", l.Name, len(l.ManagedFields), l.ManagedFields)
				}
			}
		})
	}
}

func TestE2ERateKeepsTheSchedule(t *testing.T) {
	clients := newTestClients(t, ContentTypeProtobuf)
	// 40 nodes every 400 ms is 100 renewals a second, for 2 s.
	cfg := Config{Namespace: testNamespace("rate"), Clients: 4, Nodes: 40, Interval: 400 * time.Millisecond, Duration: 2 * time.Second}
	res, err := RunRate(context.Background(), cfg, clients.Factory())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", res)
	if res.ErrorsTotal != 0 {
		t.Fatalf("errors at 100 renewals/s: %s", res)
	}
	// The schedule hands out at most 5 rounds plus the one in flight at the
	// end; a loaded machine may finish fewer.
	if res.Ops < 100 || res.Ops > 6*40 {
		t.Fatalf("%d renewals of 40 nodes every 400ms over 2s, want about 200", res.Ops)
	}
}

// renewOne sets up one lease and returns what renewing it needs: the
// renewer, the lease's slot, the Lease API of a client of kind that renews
// it, and a typed clientset to play other writers with.
func renewOne(t *testing.T, kind string) (*renewer, *leaseSlot, leaseAPI, kubernetes.Interface) {
	t.Helper()
	clients := newTestClientsOfKind(t, kind, ContentTypeProtobuf)
	cfg := Config{Namespace: testNamespace("one-" + kind), Clients: 1}.withDefaults()
	client, _ := clients.Factory()(0)
	if err := ensureNamespace(context.Background(), client, cfg.Namespace, cfg.RequestTimeout); err != nil {
		t.Fatal(err)
	}
	slot := &leaseSlot{name: "n1", holder: "n1"}
	if err := ensureLeases(context.Background(), cfg, []kubernetes.Interface{client}, []*leaseSlot{slot}); err != nil {
		t.Fatal(err)
	}
	leases := leaseAPIFor(client, cfg.Namespace)
	_, lean := leases.(*leanLeases)
	if lean != (kind == ClientLean) {
		t.Fatalf("%s clients renew through %T", kind, leases)
	}
	return &renewer{cfg: cfg, rec: NewRecorder()}, slot, leases, clients.sets[0]
}

// heldLease is the slot's lease as the renewer holds it: decoded, or
// decoded from its parked answer (lean_parked.go).
func heldLease(t *testing.T, leases leaseAPI, slot *leaseSlot) *coordinationv1.Lease {
	t.Helper()
	if slot.lease != nil {
		return slot.lease
	}
	l, ok := leases.(*leanLeases)
	if !ok || len(slot.parked) == 0 {
		t.Fatalf("slot %s holds no lease, decoded or parked, through %T", slot.name, leases)
	}
	lease, err := l.unpark(slot.parked)
	if err != nil {
		t.Fatal(err)
	}
	return lease.DeepCopy()
}

// forEachKind runs test once per client kind.
func forEachKind(t *testing.T, test func(t *testing.T, kind string)) {
	for _, kind := range []string{ClientTyped, ClientLean} {
		t.Run(kind, func(t *testing.T) { test(t, kind) })
	}
}

func TestE2EConflictIsCountedAndRecovered(t *testing.T) {
	forEachKind(t, testConflictIsCountedAndRecovered)
}

func testConflictIsCountedAndRecovered(t *testing.T, kind string) {
	r, slot, leases, client := renewOne(t, kind)
	ctx := context.Background()
	// Another writer renews the lease, so the cached resourceVersion is stale.
	other := slot.lease.DeepCopy()
	other.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	if _, err := client.CoordinationV1().Leases(r.cfg.Namespace).Update(ctx, other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stale := slot.lease.ResourceVersion
	if !r.renew(ctx, leases, slot) {
		t.Fatal("renewal after a conflict failed")
	}
	tot := r.rec.Totals()
	if tot.Errors[KindConflict] != 1 || tot.Latency.Count() != 1 {
		t.Fatalf("errors %v and %d successes, want one conflict then one success", tot.Errors, tot.Latency.Count())
	}
	if held := heldLease(t, leases, slot); held.ResourceVersion == stale {
		t.Errorf("cached lease still at the stale resourceVersion %s", stale)
	}
}

func TestE2EDeletedLeaseIsRecreated(t *testing.T) {
	forEachKind(t, testDeletedLeaseIsRecreated)
}

func testDeletedLeaseIsRecreated(t *testing.T, kind string) {
	r, slot, leases, client := renewOne(t, kind)
	ctx := context.Background()
	if err := client.CoordinationV1().Leases(r.cfg.Namespace).Delete(ctx, slot.name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	oldUID := slot.lease.UID
	if !r.renew(ctx, leases, slot) {
		t.Fatal("renewal of a deleted lease failed")
	}
	// Kubernetes answers an update of a deleted object that still carries its
	// uid with 409 (the uid precondition fails); a server answering 404 is
	// handled the same way: GET finds nothing, so the lease is created anew.
	tot := r.rec.Totals()
	if tot.Errors[KindConflict]+tot.Errors["NotFound"] != 1 || len(tot.Errors) != 1 || tot.Latency.Count() != 1 {
		t.Fatalf("errors %v and %d successes, want one conflict (or NotFound) then one success", tot.Errors, tot.Latency.Count())
	}
	if held := heldLease(t, leases, slot); held.UID == oldUID {
		t.Errorf("lease not recreated: uid still %s", oldUID)
	}
}

func TestE2ESecondRunAdoptsExistingLeases(t *testing.T) {
	clients := newTestClients(t, ContentTypeProtobuf)
	cfg := Config{Namespace: testNamespace("again"), Clients: 2, Leases: 5, Duration: 500 * time.Millisecond}
	for run := range 2 {
		res, err := RunMax(context.Background(), cfg, clients.Factory())
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if res.Ops == 0 || res.ErrorsTotal != 0 {
			t.Fatalf("run %d: %s", run, res)
		}
	}
	// The second run found the first run's leases (listed, not created): a
	// stale cached object would have shown up as a conflict above.
	w, err := NewMaxWorkload(cfg, clients.Factory())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, s := range w.slots {
		if s.lease == nil || s.lease.ResourceVersion == "" || s.lease.Spec.RenewTime == nil {
			t.Errorf("slot %s holds no server object after setup: %+v", s.name, s.lease)
		}
	}
}

func TestE2ERateRegistersNodes(t *testing.T) {
	if _, err := NewRateWorkload(Config{Namespace: "bench", Clients: 1, Nodes: 1, Interval: time.Second, Duration: time.Second, RegisterNodes: true}, nil); err == nil {
		t.Fatal("registered nodes accepted with their leases outside kube-node-lease")
	}
	clients := newTestClientsOfKind(t, ClientLean, ContentTypeProtobuf)
	client, _ := clients.Factory()(0)
	ctx := context.Background()
	const nodes = 6
	cfg := Config{Namespace: corev1.NamespaceNodeLease, RegisterNodes: true, Clients: 2, Nodes: nodes, Interval: 300 * time.Millisecond, Duration: time.Second}
	var firstUIDs map[string]types.UID
	// The second run finds the first run's Nodes and leases and keeps them.
	for run := range 2 {
		before := time.Now()
		res, err := RunRate(ctx, cfg, clients.Factory())
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if res.Ops < nodes || res.ErrorsTotal != 0 {
			t.Fatalf("run %d: want every node renewed and no errors: %s", run, res)
		}
		uids := map[string]types.UID{}
		for i := range nodes {
			name := fmt.Sprintf("node-%06d", i)
			node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("run %d: %v", run, err)
			}
			if node.Labels[FleetLabel] != "true" || !nodeReady(node) {
				t.Errorf("run %d: node %s not labelled and Ready: labels %v, conditions %+v", run, name, node.Labels, node.Status.Conditions)
			}
			uids[name] = node.UID
			lease, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("run %d: %v", run, err)
			}
			want := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: node.UID}}
			if !reflect.DeepEqual(lease.OwnerReferences, want) {
				t.Errorf("run %d: lease %s owners %+v, want %+v", run, name, lease.OwnerReferences, want)
			}
			if lease.Spec.RenewTime == nil || !lease.Spec.RenewTime.After(before) {
				t.Errorf("run %d: lease %s not renewed during the run: %+v", run, name, lease.Spec)
			}
		}
		if run == 1 && !reflect.DeepEqual(uids, firstUIDs) {
			t.Errorf("second run replaced Nodes: uids %v, first run's %v", uids, firstUIDs)
		}
		firstUIDs = uids
	}
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// The lean client keeps a renewed lease parked (lean_parked.go), and each
// renewal from the parked answer is the server's current lease with a new
// renewTime.
func TestE2ELeanRenewalsParkTheAnswer(t *testing.T) {
	r, slot, leases, client := renewOne(t, ClientLean)
	ctx := context.Background()
	for i := range 3 {
		before := time.Now()
		if !r.renew(ctx, leases, slot) {
			t.Fatalf("renewal %d failed: %v", i, r.rec.Totals().Errors)
		}
		if slot.lease != nil || len(slot.parked) == 0 {
			t.Fatalf("renewal %d left the lease decoded (%v) or nothing parked (%d bytes)", i, slot.lease != nil, len(slot.parked))
		}
		held := heldLease(t, leases, slot)
		server, err := client.CoordinationV1().Leases(r.cfg.Namespace).Get(ctx, slot.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if held.ResourceVersion != server.ResourceVersion || server.Spec.RenewTime == nil || server.Spec.RenewTime.Before(&metav1.MicroTime{Time: before.Truncate(time.Microsecond)}) {
			t.Fatalf("renewal %d: parked resourceVersion %s and the server's %s renewed at %v (renewal sent after %v)",
				i, held.ResourceVersion, server.ResourceVersion, server.Spec.RenewTime, before)
		}
	}
	if tot := r.rec.Totals(); tot.Latency.Count() != 3 || len(tot.Errors) != 0 {
		t.Fatalf("%d successes and errors %v, want 3 and none", tot.Latency.Count(), tot.Errors)
	}
}
