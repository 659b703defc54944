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
	c   *Controller
	api *apiCluster
	cc  controller.Context
}

// New builds the controller on the server's shared dependencies: it reads
// nodes and node leases from cc.Cache and writes through cc.Client.
// cfg.Logger defaults to cc.Logger.
func New(cc controller.Context, cfg Config) (*Runner, error) {
	nodes, ok := cc.Resources.Lookup(corev1.GroupName, "v1", "nodes")
	if !ok {
		return nil, errors.New("node lifecycle controller: nodes are not served")
	}
	leases, ok := cc.Resources.Lookup("coordination.k8s.io", "v1", "leases")
	if !ok {
		return nil, errors.New("node lifecycle controller: leases are not served")
	}
	if cfg.Logger == nil {
		cfg.Logger = cc.Logger.With("controller", "nodelifecycle")
	}
	api := &apiCluster{cache: cc.Cache, client: cc.Client, nodesRes: nodes, leaseRes: leases}
	c, err := newController(cfg, api)
	if err != nil {
		return nil, fmt.Errorf("node lifecycle controller: %w", err)
	}
	return &Runner{c: c, api: api, cc: cc}, nil
}

// Name implements controller.Runner.
func (r *Runner) Name() string { return "nodelifecycle" }

// Run monitors node health every MonitorPeriod, drains the NoExecute queues
// every 100 ms and reconciles a node's NoSchedule taints whenever it changes,
// all on this goroutine, until ctx ends. Events are sent by a broadcaster
// that is shut down before Run returns.
func (r *Runner) Run(ctx context.Context) error {
	c := r.c
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	defer broadcaster.Shutdown()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: r.cc.Client.CoreV1().Events("")})
	r.api.recorder = broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: EventSource})

	monitor := c.clock.NewTicker(c.cfg.MonitorPeriod)
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
			w, err = r.api.cache.Watch(ctx, watchcache.WatchOptions{Prefix: r.api.nodesRes.KeyPrefix(""), InitialState: true})
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
		case <-tainting.C():
			c.taintPass(ctx)
		case ev, ok := <-w.Events():
			if !ok {
				w.Stop()
				w = nil
				continue
			}
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			if n, ok := ev.Object.(*corev1.Node); ok {
				c.noSchedulePass(ctx, n.Name)
			}
		}
	}
}
