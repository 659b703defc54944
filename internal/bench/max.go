package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
)

// failureBackoff is how long a max-mode client pauses after a renewal
// failed for a reason other than a conflict, so that a server that is down
// or refusing is not hammered by a tight loop of instant errors.
const failureBackoff = 50 * time.Millisecond

// RunMax runs the max workload: cfg.Clients clients each own an equal share
// of cfg.Leases leases and renew them in turn, back to back, as fast as the
// server answers. It measures the server's peak renewal throughput.
func RunMax(ctx context.Context, cfg Config, factory ClientFactory) (Result, error) {
	w, err := NewMaxWorkload(cfg, factory)
	if err != nil {
		return Result{}, err
	}
	return Run(ctx, cfg, w)
}

// MaxWorkload is the Workload behind RunMax.
type MaxWorkload struct {
	cfg     Config
	factory ClientFactory
	clients []kubernetes.Interface
	slots   []*leaseSlot
}

// NewMaxWorkload checks cfg for the max workload.
func NewMaxWorkload(cfg Config, factory ClientFactory) (*MaxWorkload, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validateCommon(); err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	if cfg.Leases < cfg.Clients {
		return nil, fmt.Errorf("invalid configuration: max mode needs at least one lease per client, got %d leases for %d clients", cfg.Leases, cfg.Clients)
	}
	return &MaxWorkload{cfg: cfg, factory: factory}, nil
}

// Name implements Workload.
func (m *MaxWorkload) Name() string {
	return fmt.Sprintf("max: %d clients over %d leases", m.cfg.Clients, m.cfg.Leases)
}

// Setup implements Workload: the namespace and every lease exist afterwards.
func (m *MaxWorkload) Setup(ctx context.Context) error {
	clients, err := clientsFor(m.factory, m.cfg.Clients)
	if err != nil {
		return err
	}
	m.clients = clients
	if err := ensureNamespace(ctx, adminOf(clients[0]), m.cfg.Namespace, m.cfg.RequestTimeout); err != nil {
		return err
	}
	m.slots = make([]*leaseSlot, m.cfg.Leases)
	for i := range m.slots {
		c := i % m.cfg.Clients
		m.slots[i] = &leaseSlot{name: MaxLeaseName(i), holder: fmt.Sprintf("bench-client-%d", c)}
	}
	if err := authorizeSlots(ctx, m.cfg, clients[0], m.slots); err != nil {
		return err
	}
	return ensureLeases(ctx, m.cfg, clients, m.slots)
}

// MaxLeaseName is the name of lease i in max mode, and with node clients
// the name of the node that renews it.
func MaxLeaseName(i int) string { return fmt.Sprintf("bench-%06d", i) }

// Run implements Workload. Client c owns slots c, c+C, c+2C, ...
func (m *MaxWorkload) Run(ctx context.Context, stop <-chan struct{}, rec *Recorder) error {
	if len(m.slots) == 0 {
		return fmt.Errorf("max workload run before its setup")
	}
	r := &renewer{cfg: m.cfg, rec: rec}
	var wg sync.WaitGroup
	for c, client := range m.clients {
		var own []*leaseSlot
		for i := c; i < len(m.slots); i += len(m.clients) {
			own = append(own, m.slots[i])
		}
		leases := leaseAPIFor(client, m.cfg.Namespace)
		wg.Go(func() { m.client(ctx, stop, r, leases, own) })
	}
	wg.Wait()
	return nil
}

func (m *MaxWorkload) client(ctx context.Context, stop <-chan struct{}, r *renewer, leases leaseAPI, own []*leaseSlot) {
	backoff := time.NewTimer(0)
	defer backoff.Stop()
	<-backoff.C
	for i := 0; ; i = (i + 1) % len(own) {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		if r.renew(ctx, leases, own[i]) {
			continue
		}
		backoff.Reset(failureBackoff)
		select {
		case <-backoff.C:
		case <-stop:
			return
		case <-ctx.Done():
			return
		}
	}
}
