package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/leasehold/leasehold/internal/controller/nodelifecycle"
	"github.com/leasehold/leasehold/internal/storage"
)

// Store probe timings: kube-apiserver's etcd health check allows 2 s
// (--etcd-healthcheck-timeout); one probe a second keeps /readyz at most
// about three seconds behind the store.
const (
	storeProbeInterval = time.Second
	storeProbeTimeout  = 2 * time.Second
)

// storeProbe follows whether the store answers: every storeProbeInterval
// it reads the current revision (a quorum read on etcd) within
// storeProbeTimeout, and asks a storage.HealthReporter whether writes are
// accepted. /readyz reports the last result, so that a load balancer sends
// no client to a replica whose store is gone; the node lifecycle
// controller reads it (nodeLifecycleStatus) so that the store's outage is
// not taken for every node's. Run owns the only goroutine.
type storeProbe struct {
	store storage.Interface
	// name is the /readyz check's: "etcd", as kube-apiserver's, or
	// "storage" for the embedded store.
	name string

	mu      sync.Mutex
	err     error // the last probe's failure; nil while the store answers
	outages uint64
}

func newStoreProbe(store storage.Interface, onEtcd bool) *storeProbe {
	p := &storeProbe{store: store, name: "storage"}
	if onEtcd {
		p.name = "etcd"
	}
	return p
}

// run probes until ctx ends.
func (p *storeProbe) run(ctx context.Context) {
	t := time.NewTicker(storeProbeInterval)
	defer t.Stop()
	for {
		p.probe(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p *storeProbe) probe(ctx context.Context) {
	pctx, cancel := context.WithTimeout(ctx, storeProbeTimeout)
	_, err := p.store.CurrentRevision(pctx)
	cancel()
	if ctx.Err() != nil {
		return // shutting down: not the store's fault
	}
	if err != nil {
		err = fmt.Errorf("reading the current revision: %w", err)
	} else if hr, ok := p.store.(storage.HealthReporter); ok {
		err = hr.Health()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil && p.err == nil {
		p.outages++
	}
	p.err = err
}

// check is the probe as a /readyz check: the last probe's failure, or
// else the store's own word on writes right now (storageCheck), so that a
// disk that fills is reported at once.
func (p *storeProbe) check() healthCheck {
	live := storageCheck(p.store)
	return healthCheck{name: p.name, check: func() error {
		p.mu.Lock()
		err := p.err
		p.mu.Unlock()
		if err != nil {
			return err
		}
		return live.check()
	}}
}

// nodeLifecycleStatus is the probe as nodelifecycle.Config.StoreStatus.
func (p *storeProbe) nodeLifecycleStatus() nodelifecycle.StoreStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	return nodelifecycle.StoreStatus{Down: p.err != nil, Outages: p.outages}
}
