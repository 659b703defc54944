// Package eventttl expires Events, as kube-apiserver's --event-ttl does
// (default 1 h). Kubernetes attaches an etcd lease to every event write;
// Leasehold's stores have no TTLs, so this controller sweeps instead: every
// Interval it deletes the events whose newest timestamp is older than TTL.
// An event therefore lives between TTL and TTL+Interval after its last
// update, never less than TTL.
package eventttl

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/controller"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// Config tunes the sweep.
type Config struct {
	// TTL is how long an event is kept after its last update (default 1 h).
	TTL time.Duration
	// Interval between sweeps (default 1 min).
	Interval time.Duration
}

// Controller deletes expired events.
type Controller struct {
	cc  controller.Context
	cfg Config

	// mu serializes sweeps, which own touched and revs.
	mu sync.Mutex
	// touched is, by key, each event's revision and newest timestamp as of
	// the last sweep: a sweep decodes only the events written since. The
	// cache keeps events it has not seen change compressed, and an hour's
	// worth of events (one per node registered, at least) decoded every
	// minute was seconds of CPU and as many megabytes of garbage.
	touched map[string]touchMark
	revs    []watchcache.KeyRevision
}

// touchMark is what a sweep remembers of one event.
type touchMark struct {
	rev  int64
	last int64 // LastTouched, in Unix nanoseconds
}

// New returns the controller.
func New(cc controller.Context, cfg Config) *Controller {
	if cfg.TTL <= 0 {
		cfg.TTL = time.Hour
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Minute
	}
	return &Controller{cc: cc, cfg: cfg}
}

// Name implements controller.Runner.
func (c *Controller) Name() string { return "event-ttl" }

// Run sweeps until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := c.Sweep(ctx); err != nil && ctx.Err() == nil {
				c.cc.Logger.Error("expiring events", "err", err)
			}
		}
	}
}

// Sweep deletes every event last touched more than TTL ago.
func (c *Controller) Sweep(ctx context.Context) error {
	events, res := c.cc.Resources.Lookup("", "v1", "events")
	if !res {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.revs, _ = c.cc.Cache.ListRevisions(events.KeyPrefix(""), c.revs[:0])
	deadline := c.cc.Now().Add(-c.cfg.TTL).UnixNano()
	next := make(map[string]touchMark, len(c.revs))
	defer func() { c.touched = next }()
	for _, kr := range c.revs {
		m, ok := c.touched[kr.Key]
		var ev *corev1.Event
		if !ok || m.rev != kr.ModRevision {
			if ev = c.event(kr.Key); ev == nil {
				continue
			}
			m = touchMark{rev: kr.ModRevision, last: LastTouched(ev).UnixNano()}
		}
		next[kr.Key] = m
		if m.last >= deadline {
			continue
		}
		if ev == nil {
			if ev = c.event(kr.Key); ev == nil {
				continue
			}
		}
		uid := ev.UID
		err := c.cc.Client.CoreV1().Events(ev.Namespace).Delete(ctx, ev.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting event %s/%s: %w", ev.Namespace, ev.Name, err)
		}
	}
	return nil
}

// event reads the event at key from the cache (nil if it is gone).
func (c *Controller) event(key string) *corev1.Event {
	obj, ok := c.cc.Cache.Get(key)
	if !ok {
		return nil
	}
	ev, _ := obj.(*corev1.Event)
	return ev
}

// LastTouched is the newest time an event records about itself.
func LastTouched(ev *corev1.Event) time.Time {
	t := ev.CreationTimestamp.Time
	for _, c := range []time.Time{ev.LastTimestamp.Time, ev.EventTime.Time} {
		if c.After(t) {
			t = c
		}
	}
	if ev.Series != nil && ev.Series.LastObservedTime.After(t) {
		t = ev.Series.LastObservedTime.Time
	}
	return t
}
