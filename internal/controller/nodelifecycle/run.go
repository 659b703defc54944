package nodelifecycle

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/leasehold/leasehold/internal/controller"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// EventSource is the component named in the controller's events.
const EventSource = "node-controller"

// Runner runs the controller inside `serve`.
type Runner struct {
	cc  controller.Context
	cfg Config
}

// New returns the controller for `serve`, on the server's shared
// dependencies: it reads nodes and node leases from cc.Cache and writes
// through cc.Client. cfg.Logger defaults to cc.Logger. A cfg that fails
// Validate makes Run return the error at once (check it with the flags).
func New(cc controller.Context, cfg Config) *Runner {
	if cfg.Logger == nil {
		cfg.Logger = cc.Logger.With("controller", "nodelifecycle")
	}
	return &Runner{cc: cc, cfg: cfg}
}

// Name implements controller.Runner.
func (r *Runner) Name() string { return "nodelifecycle" }

// build wires the controller to the watch cache and the loopback client.
func (r *Runner) build() (*Controller, *apiCluster, error) {
	nodes, ok := r.cc.Resources.Lookup(corev1.GroupName, "v1", "nodes")
	if !ok {
		return nil, nil, errors.New("node lifecycle controller: nodes are not served")
	}
	leases, ok := r.cc.Resources.Lookup("coordination.k8s.io", "v1", "leases")
	if !ok {
		return nil, nil, errors.New("node lifecycle controller: leases are not served")
	}
	api := newAPICluster(r.cc.Cache, r.cc.Client, nodes, leases)
	c, err := newController(r.cfg, api)
	if err != nil {
		return nil, nil, fmt.Errorf("node lifecycle controller: %w", err)
	}
	return c, api, nil
}

// Run monitors node health every MonitorPeriod, drains the NoExecute queues
// every 100 ms and reconciles a node's NoSchedule taints whenever it changes,
// all on this goroutine, until ctx ends. Events are sent by a broadcaster
// that is shut down before Run returns.
func (r *Runner) Run(ctx context.Context) error {
	c, api, err := r.build()
	if err != nil {
		return err
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	defer broadcaster.Shutdown()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: r.cc.Client.CoreV1().Events("")})
	api.recorder = broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: EventSource})

	// The monitor period starts after each pass ends, as kube-controller-
	// manager's wait.Until does. With a fixed-rate ticker, the pass exactly
	// one grace period after the last heartbeat sees now-probe == grace,
	// which is not yet "after" it, and the node went Unknown a whole period
	// late.
	monitor := c.clock.NewTimer(c.cfg.MonitorPeriod)
	defer monitor.Stop()
	tainting := c.clock.NewTicker(taintingPeriod)
	defer tainting.Stop()

	c.log.Info("starting", "monitorPeriod", c.cfg.MonitorPeriod.String(), "gracePeriod", c.cfg.GracePeriod.String(),
		"startupGracePeriod", c.cfg.StartupGracePeriod.String(), "evictionRate", c.cfg.EvictionRate)
	c.monitor(ctx)
	var w *watchcache.Watcher
	defer func() {
		if w != nil {
			w.Stop()
		}
	}()
	for {
		if w == nil {
			// (Re)subscribe with the current state: a watcher that fell
			// behind closes, and every node is then reconciled again.
			var err error
			w, err = api.cache.Watch(ctx, watchcache.WatchOptions{Prefix: api.nodePrefix, InitialState: true})
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("watching nodes: %w", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-monitor.C():
			c.monitor(ctx)
			monitor.Reset(c.cfg.MonitorPeriod)
		case <-tainting.C():
			c.taintPass(ctx)
		case ev, ok := <-w.Events():
			if !ok {
				w.Stop()
				w = nil
				continue
			}
			// Every change already waiting joins this one, so that their
			// taint writes go out in parallel.
			names, open := changedNodes(ev, w.Events())
			if !open {
				w.Stop()
				w = nil
			}
			c.noSchedulePasses(ctx, names)
		}
	}
}

// maxChangeBatch caps the node changes one round of NoSchedule tainting
// takes, so that monitor and tainting passes are not held off for long.
const maxChangeBatch = 1024

// changedNodes returns the names of the nodes that first and the events
// already waiting in events added or changed, each once, and whether events
// is still open.
func changedNodes(first watchcache.Event, events <-chan watchcache.Event) ([]string, bool) {
	var names []string
	seen := map[string]bool{}
	note := func(ev watchcache.Event) {
		if ev.Type != watch.Added && ev.Type != watch.Modified {
			return
		}
		if n, ok := ev.Object.(*corev1.Node); ok && !seen[n.Name] {
			seen[n.Name] = true
			names = append(names, n.Name)
		}
	}
	note(first)
	for range maxChangeBatch - 1 {
		select {
		case ev, ok := <-events:
			if !ok {
				return names, false
			}
			note(ev)
		default:
			return names, true
		}
	}
	return names, true
}
