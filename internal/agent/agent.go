package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/leasehold/leasehold/internal/leasecontroller"
)

// Agent is one node's heartbeat agent: Node registration and status, and
// the node lease. Build it with New and start it with Run.
type Agent struct {
	cfg    Config
	log    *slog.Logger
	lease  *leasecontroller.Controller
	status *statusController

	mu      sync.Mutex
	started bool
}

// New builds an agent for cfg. client is used for registration; heartbeat
// for the lease and status reads and writes. NewClients builds the pair the
// kubelet's way (the heartbeat client unthrottled, with a short timeout, see
// HeartbeatRESTConfig). Many agents may share the same clients.
func New(client, heartbeat kubernetes.Interface, cfg Config, clk clock.Clock, log *slog.Logger) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("agent config: %w", err)
	}
	if client == nil || heartbeat == nil {
		return nil, errors.New("agent: client and heartbeat client are required")
	}
	if clk == nil {
		return nil, errors.New("agent: clock is required")
	}
	if log == nil {
		return nil, errors.New("agent: logger is required")
	}
	log = log.With("node", cfg.NodeName)
	lease, err := newLeaseController(heartbeat, cfg, clk, log)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return &Agent{
		cfg:    cfg,
		log:    log,
		lease:  lease,
		status: newStatusController(client, heartbeat, cfg, clk, log),
	}, nil
}

// Run heartbeats until ctx ends, then returns nil once every goroutine it
// started has stopped. Failures talking to the API server are logged and
// retried, never returned: a node agent must outlive an API server outage.
// Run may be called only once.
func (a *Agent) Run(ctx context.Context) error {
	a.mu.Lock()
	if a.started {
		a.mu.Unlock()
		return errors.New("agent: Run called twice")
	}
	a.started = true
	a.mu.Unlock()

	a.log.Info("Starting node agent", "version", a.cfg.Version, "registerNode", a.cfg.RegisterNode)
	var wg sync.WaitGroup
	wg.Go(func() { a.lease.Run(ctx) })
	wg.Go(func() { a.status.run(ctx) })
	wg.Wait()
	a.log.Info("Node agent stopped")
	return nil
}
