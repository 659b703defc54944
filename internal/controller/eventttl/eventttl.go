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
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/controller"
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
	objs, _ := c.cc.Cache.List(events.KeyPrefix(""), nil)
	deadline := c.cc.Now().Add(-c.cfg.TTL)
	for _, obj := range objs {
		ev, ok := obj.(*corev1.Event)
		if !ok || !LastTouched(ev).Before(deadline) {
			continue
		}
		uid := ev.UID
		err := c.cc.Client.CoreV1().Events(ev.Namespace).Delete(ctx, ev.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting event %s/%s: %w", ev.Namespace, ev.Name, err)
		}
	}
	return nil
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
