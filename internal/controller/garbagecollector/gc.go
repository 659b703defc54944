package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"

	"github.com/leasehold/leasehold/internal/controller"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// Name is the controller's name in logs (kube-controller-manager's is
// "garbage-collector-controller").
const Name = "garbage-collector"

// Workers is how many keys are processed at once.
const Workers = 2

// Retry delays for a key whose processing failed (conflicts, transient errors).
const (
	retryBaseDelay = 5 * time.Millisecond
	retryMaxDelay  = 30 * time.Second
	// rewatchDelay spaces re-watches when the cache watch ends early.
	rewatchDelay = 100 * time.Millisecond
)

// GarbageCollector is the controller. Make it with New; Run it once.
type GarbageCollector struct {
	cache  *watchcache.Cache
	client kubernetes.Interface
	w      writer
	res    *resources
	log    *slog.Logger
	now    func() time.Time

	graph *graph
	queue workqueue.TypedRateLimitingInterface[string]

	// warned remembers the dependents already reported with an
	// OwnerRefInvalidNamespace event (by uid), so each is reported once.
	warnedMu sync.Mutex
	warned   map[types.UID]bool
}

// New builds the garbage collector over every resource in cc.Resources.
func New(cc controller.Context) *GarbageCollector {
	now := cc.Now
	if now == nil {
		now = time.Now
	}
	return &GarbageCollector{
		cache:  cc.Cache,
		client: cc.Client,
		w:      writer{rest: cc.Client.CoreV1().RESTClient()},
		res:    newResources(cc.Resources),
		log:    cc.Logger.With("controller", Name),
		now:    now,
		graph:  newGraph(),
		warned: map[types.UID]bool{},
	}
}

// Name implements controller.Runner.
func (gc *GarbageCollector) Name() string { return Name }

// Run watches the cache and collects garbage until ctx ends. Workers start
// once the first snapshot is in the graph; Run returns after they stopped.
func (gc *GarbageCollector) Run(ctx context.Context) error {
	if len(gc.res.all) == 0 {
		<-ctx.Done()
		return nil
	}
	gc.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](retryBaseDelay, retryMaxDelay),
		workqueue.TypedRateLimitingQueueConfig[string]{})
	var workers sync.WaitGroup
	defer func() {
		gc.queue.ShutDown()
		workers.Wait()
	}()
	started := false
	onSynced := func() {
		if started {
			return
		}
		started = true
		for range Workers {
			workers.Add(1)
			go func() {
				defer workers.Done()
				for gc.processNext(ctx) {
				}
			}()
		}
	}
	for {
		err := gc.watch(ctx, onSynced)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			gc.log.Error("watching the cache", "err", err)
		} else {
			gc.log.Info("cache watch ended; re-listing")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(rewatchDelay):
		}
	}
}

// watch loads a snapshot of every served object into a fresh graph, then
// follows the changes until the watch ends. Keys are held back from the
// queue until the snapshot is complete, so no worker judges an owner
// against a half-built graph.
func (gc *GarbageCollector) watch(ctx context.Context, onSynced func()) error {
	w, err := gc.cache.Watch(ctx, watchcache.WatchOptions{Prefix: gc.res.prefix, InitialState: true, Bookmarks: true})
	if err != nil {
		return fmt.Errorf("watching %s: %w", gc.res.prefix, err)
	}
	defer w.Stop()
	gc.graph.reset()
	synced := false
	var pending []string
	enqueue := func(key string) { pending = append(pending, key) }
	for ev := range w.Events() {
		if ev.Type == watch.Bookmark {
			if !ev.InitialEventsEnd {
				continue
			}
			synced = true
			gc.graph.setRevision(ev.Rev)
			enqueue = gc.queue.Add
			for _, k := range pending {
				gc.queue.Add(k)
			}
			pending = nil
			onSynced()
			continue
		}
		if err := gc.observe(ev, enqueue); err != nil {
			gc.log.Error("observing change", "key", ev.Key, "err", err)
		}
		if synced {
			gc.graph.setRevision(ev.Rev)
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return errors.New("cache watch closed")
}

// processNext handles one key; false when the queue is shut down.
func (gc *GarbageCollector) processNext(ctx context.Context) bool {
	key, quit := gc.queue.Get()
	if quit {
		return false
	}
	defer gc.queue.Done(key)
	err := gc.process(ctx, key)
	switch {
	case err == nil:
		gc.queue.Forget(key)
	case ctx.Err() != nil:
	default:
		gc.log.Debug("will retry", "key", key, "err", err)
		gc.queue.AddRateLimited(key)
	}
	return true
}
