package leasecontroller

import (
	"context"
	"fmt"
	"log/slog"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Controller renews one lease. Build it with New and start it with Run; it
// is used by Run's goroutine only, so latest needs no lock.
type Controller struct {
	cfg  Config
	log  *slog.Logger
	what string // the lease in log messages

	// latest is the last lease the server returned; renewals PUT a copy of
	// it without a GET.
	latest *coordinationv1.Lease
}

// New checks cfg and returns its controller.
func New(cfg Config) (*Controller, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("lease controller config: %w", err)
	}
	what := cfg.Description
	if what == "" {
		what = "lease"
	}
	return &Controller{
		cfg:  cfg,
		log:  cfg.Logger.With("lease", cfg.Namespace+"/"+cfg.Name),
		what: what,
	}, nil
}

// Run renews the lease every RenewInterval (jittered, sliding) until ctx
// ends. Errors are logged and retried, never returned.
func (c *Controller) Run(ctx context.Context) {
	c.log.Info("Starting "+c.what+" controller", "renewInterval", c.cfg.RenewInterval, "leaseDurationSeconds", c.cfg.DurationSeconds)
	RunJittered(ctx, c.cfg.Clock, c.cfg.RenewInterval, c.sync)
	c.log.Info("Stopped " + c.what + " controller")
}

// sync is one renewal: the cheap PUT of the cached lease, else GET (and
// create on 404) and then the update routine.
func (c *Controller) sync(ctx context.Context) {
	if c.latest != nil {
		err := c.retryUpdate(ctx, c.latest)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			return
		}
		c.log.Info("failed to update lease using latest lease, fallback to ensure lease", "err", err)
	}
	lease, created := c.backoffEnsure(ctx)
	c.latest = lease
	// A lease we just created already carries a fresh renewTime.
	if lease != nil && !created {
		if err := c.retryUpdate(ctx, lease); err != nil && ctx.Err() == nil {
			c.log.Error("Will retry updating lease", "err", err, "interval", c.cfg.RenewInterval)
		}
	}
}

// backoffEnsure calls ensure until it succeeds, sleeping 200ms, 400ms, ...
// up to 7s between attempts. It returns nil when ctx ends, or when the lease
// is missing and Prepare did not let it be created yet.
func (c *Controller) backoffEnsure(ctx context.Context) (*coordinationv1.Lease, bool) {
	wait := BackoffStart
	for {
		lease, created, err := c.ensure(ctx)
		if err == nil {
			return lease, created
		}
		if ctx.Err() != nil {
			return nil, false
		}
		wait = NextBackoff(wait)
		c.log.Error("Failed to ensure lease exists, will retry", "err", err, "interval", wait)
		if !Sleep(ctx, c.cfg.Clock, wait) {
			return nil, false
		}
	}
}

// ensure GETs the lease and creates it on 404. A lease that Prepare cannot
// complete yet is not created this round, and that is not an error: the
// next renewal tries again (the kubelet's behaviour, so that a node lease
// never exists without an owner the garbage collector can follow).
func (c *Controller) ensure(ctx context.Context) (lease *coordinationv1.Lease, created bool, err error) {
	lease, err = c.cfg.Leases.Get(ctx, c.cfg.Name, metav1.GetOptions{})
	switch {
	case err == nil:
		return lease, false, nil
	case !apierrors.IsNotFound(err):
		return nil, false, fmt.Errorf("get lease %s/%s: %w", c.cfg.Namespace, c.cfg.Name, err)
	}
	fresh, err := c.prepare(ctx, nil)
	if err != nil {
		return nil, false, nil
	}
	lease, err = c.cfg.Leases.Create(ctx, fresh, metav1.CreateOptions{})
	if err != nil {
		return nil, false, fmt.Errorf("create lease %s/%s: %w", c.cfg.Namespace, c.cfg.Name, err)
	}
	c.log.Info("Created "+c.what, "uid", lease.UID, "ownerUID", ownerUID(lease))
	return lease, true, nil
}

// retryUpdate PUTs a renewal of base up to MaxUpdateRetries times. A 409
// means base is stale (someone else wrote, or the lease was deleted and the
// uid precondition failed): it GETs the current lease and retries from it.
func (c *Controller) retryUpdate(ctx context.Context, base *coordinationv1.Lease) error {
	for attempt := range MaxUpdateRetries {
		if ctx.Err() != nil {
			return fmt.Errorf("renew lease: %w", ctx.Err())
		}
		lease, err := c.prepare(ctx, base)
		if err != nil {
			c.log.Error("Failed to prepare lease", "err", err)
			continue
		}
		start := c.cfg.Clock.Now()
		updated, err := c.cfg.Leases.Update(ctx, lease, metav1.UpdateOptions{})
		if c.cfg.OnRenew != nil {
			c.cfg.OnRenew(c.cfg.Clock.Since(start), err)
		}
		if err == nil {
			c.latest = updated
			return nil
		}
		if ctx.Err() != nil {
			// Stopping: the renewal in flight was cancelled, which is not
			// a failure to report (sync returns quietly on it too).
			return fmt.Errorf("renew lease: %w", ctx.Err())
		}
		c.log.Error("Failed to update lease", "err", err, "attempt", attempt+1)
		if apierrors.IsConflict(err) {
			base, _ = c.backoffEnsure(ctx)
			continue
		}
		if attempt > 0 && c.cfg.OnRepeatedFailure != nil {
			c.cfg.OnRepeatedFailure()
		}
	}
	return fmt.Errorf("failed %d attempts to update lease", MaxUpdateRetries)
}

// prepare builds the lease to write from base (nil: a fresh one) and runs
// the Prepare hook on it.
func (c *Controller) prepare(ctx context.Context, base *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	lease := buildLease(base, c.cfg.Namespace, c.cfg.Name, c.cfg.HolderIdentity, c.cfg.DurationSeconds, c.cfg.Clock.Now())
	if c.cfg.Prepare == nil {
		return lease, nil
	}
	if err := c.cfg.Prepare(ctx, lease); err != nil {
		return nil, err
	}
	return lease, nil
}

func ownerUID(lease *coordinationv1.Lease) string {
	if len(lease.OwnerReferences) == 0 {
		return ""
	}
	return string(lease.OwnerReferences[0].UID)
}
