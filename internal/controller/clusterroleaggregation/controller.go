// Package clusterroleaggregation fills aggregated ClusterRoles, as
// kube-controller-manager's clusterrole-aggregation controller: a
// ClusterRole with an aggregationRule holds the union of the rules of the
// ClusterRoles its label selectors match (that is how admin, edit and view
// grow when a role labelled rbac.authorization.k8s.io/aggregate-to-edit
// appears), kept current as ClusterRoles change.
//
// Invariants: the controller reads ClusterRoles from the watch cache (shared
// objects, copied before any change) and writes only aggregated roles' rules,
// through the client, conditionally on the resourceVersion it read; a
// conflicting write is followed by a change event, which brings another
// pass. Run returns after its one goroutine (the caller's) is done with the
// watch.
package clusterroleaggregation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/internal/clock"
	"github.com/leasehold/leasehold/internal/controller"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// Name is used in logs.
const Name = "clusterrole-aggregation-controller"

// retryAfter is how long a pass that failed waits before it runs again.
const retryAfter = time.Second

// Controller keeps aggregated ClusterRoles' rules current.
type Controller struct {
	cache  *watchcache.Cache
	prefix string
	client kubernetes.Interface
	log    *slog.Logger
}

// New returns the controller of the server whose dependencies are cc; it
// does nothing if the server does not serve ClusterRoles.
func New(cc controller.Context) *Controller {
	c := &Controller{cache: cc.Cache, client: cc.Client, log: cc.Logger.With("controller", Name)}
	if res, ok := cc.Resources.Lookup(rbacv1.GroupName, "v1", "clusterroles"); ok {
		c.prefix = res.KeyPrefix("")
	}
	return c
}

// Name implements controller.Runner.
func (c *Controller) Name() string { return Name }

// Run aggregates after every burst of ClusterRole changes until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	if c.prefix == "" {
		<-ctx.Done()
		return nil
	}
	for ctx.Err() == nil {
		w, err := c.cache.Watch(ctx, watchcache.WatchOptions{Prefix: c.prefix, InitialState: true})
		if err != nil {
			if ctx.Err() == nil {
				c.log.Error("watching cluster roles", "err", err)
				clock.Sleep(ctx, retryAfter)
			}
			continue
		}
		c.follow(ctx, w)
		w.Stop()
	}
	return nil
}

// follow syncs once the events received so far are drained, so a burst
// (the initial state, a bootstrap) costs one pass; a failed pass is retried
// after retryAfter even without new events.
func (c *Controller) follow(ctx context.Context, w *watchcache.Watcher) {
	events := w.Events()
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-events:
			if !ok {
				return
			}
			if len(events) > 0 {
				continue
			}
		case <-retry:
		}
		retry = nil
		if err := c.Sync(ctx); err != nil && ctx.Err() == nil {
			c.log.Error("aggregating cluster roles", "err", err)
			retry = time.After(retryAfter)
		}
	}
}

// Sync brings every aggregated ClusterRole in the cache up to date, and
// reports every failure.
func (c *Controller) Sync(ctx context.Context) error {
	objs, _ := c.cache.List(c.prefix, nil)
	roles := make([]*rbacv1.ClusterRole, 0, len(objs))
	for _, o := range objs {
		if r, ok := o.(*rbacv1.ClusterRole); ok {
			roles = append(roles, r)
		}
	}
	var errs []error
	for _, r := range roles {
		if r.AggregationRule == nil {
			continue
		}
		if err := c.aggregate(ctx, r, roles); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// aggregate writes role's aggregated rules if they differ from its own.
func (c *Controller) aggregate(ctx context.Context, role *rbacv1.ClusterRole, all []*rbacv1.ClusterRole) error {
	rules, err := Rules(role, all)
	if err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(role.Rules, rules) {
		return nil
	}
	updated := role.DeepCopy()
	updated.Rules = rules
	_, err = c.client.RbacV1().ClusterRoles().Update(ctx, updated, metav1.UpdateOptions{FieldManager: Name})
	switch {
	case err == nil:
		c.log.Debug("aggregated cluster role", "name", role.Name, "rules", len(rules))
		return nil
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		// Changed or gone since the cache showed it: its event brings the
		// next pass.
		return nil
	default:
		return fmt.Errorf("updating cluster role %s: %w", role.Name, err)
	}
}
