package bench

import (
	"context"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// RunRate runs the rate workload: cfg.Nodes simulated nodes each renew their
// lease once every cfg.Interval, their schedules spread evenly over the
// interval as a real fleet's are, carried out by cfg.Clients concurrent
// clients. It measures latency at a fixed, realistic load.
func RunRate(ctx context.Context, cfg Config, factory ClientFactory) (Result, error) {
	w, err := NewRateWorkload(cfg, factory)
	if err != nil {
		return Result{}, err
	}
	return Run(ctx, cfg, w)
}

// RateWorkload is the Workload behind RunRate.
type RateWorkload struct {
	cfg     Config
	factory ClientFactory
	clients []kubernetes.Interface
	slots   []*leaseSlot
}

// NewRateWorkload checks cfg for the rate workload.
func NewRateWorkload(cfg Config, factory ClientFactory) (*RateWorkload, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validateCommon(); err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	if cfg.Nodes <= 0 || cfg.Interval <= 0 {
		return nil, fmt.Errorf("invalid configuration: rate mode needs nodes and an interval, got %d nodes every %v", cfg.Nodes, cfg.Interval)
	}
	if cfg.RegisterNodes && cfg.Namespace != corev1.NamespaceNodeLease {
		// Elsewhere the node lifecycle controller would not see the
		// heartbeats, and would mark every registered Node unreachable.
		return nil, fmt.Errorf("invalid configuration: registered nodes need their leases in %q, not %q", corev1.NamespaceNodeLease, cfg.Namespace)
	}
	return &RateWorkload{cfg: cfg, factory: factory}, nil
}

// Name implements Workload.
func (w *RateWorkload) Name() string {
	return fmt.Sprintf("rate: %d nodes every %v (%.0f/s) with %d clients",
		w.cfg.Nodes, w.cfg.Interval, float64(w.cfg.Nodes)/w.cfg.Interval.Seconds(), w.cfg.Clients)
}

// Setup implements Workload: the namespace and one lease per node exist
// afterwards, each held by its node as a kubelet's is (and, with
// cfg.RegisterNodes, owned by the node's registered Node).
func (w *RateWorkload) Setup(ctx context.Context) error {
	clients, err := clientsFor(w.factory, w.cfg.Clients)
	if err != nil {
		return err
	}
	w.clients = clients
	if err := ensureNamespace(ctx, adminOf(clients[0]), w.cfg.Namespace, w.cfg.RequestTimeout); err != nil {
		return err
	}
	w.slots = make([]*leaseSlot, w.cfg.Nodes)
	for i := range w.slots {
		name := RateNodeName(i)
		w.slots[i] = &leaseSlot{name: name, holder: name}
	}
	if err := authorizeSlots(ctx, w.cfg, clients[0], w.slots); err != nil {
		return err
	}
	return ensureLeases(ctx, w.cfg, clients, w.slots)
}

// RateNodeName is the name of simulated node i in rate mode: its lease's,
// its Node's with Config.RegisterNodes, and with node clients its user's.
func RateNodeName(i int) string { return fmt.Sprintf("node-%06d", i) }

// Run implements Workload. One goroutine (this one) dispatches renewals as
// they fall due; the clients carry them out. A node whose previous renewal
// is still in flight when the next falls due skips it, counted as "overrun".
func (w *RateWorkload) Run(ctx context.Context, stop <-chan struct{}, rec *Recorder) error {
	if len(w.slots) == 0 {
		return fmt.Errorf("rate workload run before its setup")
	}
	r := &renewer{cfg: w.cfg, rec: rec}
	leases := make([]leaseAPI, len(w.clients))
	for i, client := range w.clients {
		leases[i] = leaseAPIFor(client, w.cfg.Namespace)
	}
	runEvenly(ctx, stop, rec, len(w.slots), w.cfg.Interval, len(w.clients),
		func(i int) *atomic.Bool { return &w.slots[i].busy },
		func(c, i int) { r.renew(ctx, leases[c], w.slots[i]) })
	return nil
}
