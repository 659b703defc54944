package election

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"

	"github.com/leasehold/leasehold/internal/clock"
	"github.com/leasehold/leasehold/internal/controller"
	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// leaseKey names a Lease that candidates compete for.
type leaseKey struct{ namespace, name string }

func (k leaseKey) String() string { return k.namespace + "/" + k.name }

// Controller is the election controller. Build it with New; Run it once.
type Controller struct {
	cfg    Config
	cache  *watchcache.Cache
	client kubernetes.Interface
	leases *registry.Resource
	cands  *registry.Resource
	log    *slog.Logger
	now    func() time.Time
	index  *candidateIndex
	queue  workqueue.TypedRateLimitingInterface[leaseKey]
}

// New returns the controller for the server whose dependencies are cc.
// Run fails at once when the server does not serve Leases and v1beta1
// LeaseCandidates.
func New(cc controller.Context, cfg Config) *Controller {
	leases, _ := cc.Resources.Lookup(coordinationv1.GroupName, "v1", "leases")
	cands, _ := cc.Resources.Lookup(coordinationv1beta1.GroupName, "v1beta1", "leasecandidates")
	now := cc.Now
	if now == nil {
		now = time.Now
	}
	return &Controller{
		cfg:    cfg.withDefaults(),
		cache:  cc.Cache,
		client: cc.Client,
		leases: leases,
		cands:  cands,
		log:    cc.Logger.With("controller", ControllerName),
		now:    now,
		index:  newCandidateIndex(),
	}
}

// Name implements controller.Runner.
func (c *Controller) Name() string { return ControllerName }

// Run watches candidates and Leases and runs elections until ctx ends; it
// returns after its goroutines have stopped.
func (c *Controller) Run(ctx context.Context) error {
	if c.leases == nil || c.cands == nil {
		return errors.New("election controller: coordination.k8s.io/v1 leases and v1beta1 leasecandidates must be served")
	}
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[leaseKey](),
		workqueue.TypedRateLimitingQueueConfig[leaseKey]{Name: ControllerName},
	)
	var wg sync.WaitGroup
	defer wg.Wait()
	// ShutDown runs before wg.Wait (defers run last-in first-out), which
	// is what ends the workers blocked in Get.
	defer c.queue.ShutDown()

	wg.Go(func() { c.watch(ctx, c.cands.KeyPrefix(""), c.index.reset, c.candidateEvent) })
	wg.Go(func() { c.watch(ctx, c.leases.KeyPrefix(""), func() {}, c.leaseEvent) })
	for range c.cfg.Workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	c.log.Info("started", "electionDuration", c.cfg.ElectionDuration, "leaseDurationSeconds", c.cfg.LeaseDurationSeconds)
	<-ctx.Done()
	return nil
}

// watch feeds every event under prefix to handle, re-watching from the
// current state whenever the watch ends early (for example when this
// watcher fell a whole window behind), until ctx ends. restart runs before
// each watch's initial state arrives, so state built from the events can
// be rebuilt from scratch (deletions missed in between leave no trace).
func (c *Controller) watch(ctx context.Context, prefix string, restart func(), handle func(watchcache.Event)) {
	for ctx.Err() == nil {
		w, err := c.cache.Watch(ctx, watchcache.WatchOptions{Prefix: prefix, InitialState: true})
		if err != nil {
			if ctx.Err() == nil {
				c.log.Error("watching", "prefix", prefix, "err", err)
				clock.Sleep(ctx, time.Second)
			}
			continue
		}
		restart()
		for ev := range w.Events() {
			handle(ev)
		}
		w.Stop()
	}
}

// candidateEvent records the candidate in the index and queues its Lease.
func (c *Controller) candidateEvent(ev watchcache.Event) {
	cand, ok := ev.Object.(*coordinationv1beta1.LeaseCandidate)
	if !ok {
		return
	}
	key := leaseKey{cand.Namespace, cand.Spec.LeaseName}
	if ev.Type == watch.Deleted {
		c.index.remove(key, cand.Name)
	} else {
		c.index.add(key, cand.Name)
	}
	c.queue.Add(key)
}

// leaseEvent queues a Lease that candidates compete for; the many Leases
// nobody coordinates (node heartbeats) cost one map lookup.
func (c *Controller) leaseEvent(ev watchcache.Event) {
	lease, ok := ev.Object.(*coordinationv1.Lease)
	if !ok {
		return
	}
	key := leaseKey{lease.Namespace, lease.Name}
	if c.index.has(key) {
		c.queue.Add(key)
	}
}

// processNext reconciles one Lease; false once the queue is shut down.
func (c *Controller) processNext(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	requeue, err := c.reconcile(ctx, key)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			c.log.Warn("election step failed; retrying", "lease", key.String(), "err", err)
		}
		c.queue.AddRateLimited(key)
	default:
		c.queue.Forget(key)
		if requeue > 0 {
			c.queue.AddAfter(key, requeue)
		}
	}
	return true
}
