package agent

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	coordclientv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/clock"
)

// leaseController renews the node lease the way component-helpers' lease
// controller does for the kubelet. It is used by one goroutine only (run),
// so latest needs no lock.
type leaseController struct {
	leases          coordclientv1.LeaseInterface
	client          kubernetes.Interface // for the Node GET behind the owner reference
	nodeName        string
	durationSeconds int32
	renewInterval   time.Duration
	clock           clock.Clock
	log             *slog.Logger
	onRepeatedFail  func()
	onRenew         func(time.Duration, error)

	// latest is the last lease the server returned; renewals PUT a copy of
	// it without a GET.
	latest *coordinationv1.Lease
}

func newLeaseController(heartbeat kubernetes.Interface, cfg Config, clk clock.Clock, log *slog.Logger) *leaseController {
	return &leaseController{
		leases:          heartbeat.CoordinationV1().Leases(corev1.NamespaceNodeLease),
		client:          heartbeat,
		nodeName:        cfg.NodeName,
		durationSeconds: cfg.LeaseDurationSeconds,
		renewInterval:   cfg.RenewInterval(),
		clock:           clk,
		log:             log.With("lease", corev1.NamespaceNodeLease+"/"+cfg.NodeName),
		onRepeatedFail:  cfg.OnRepeatedHeartbeatFailure,
		onRenew:         cfg.OnRenew,
	}
}

// run renews the lease every renewInterval (jittered, sliding) until ctx ends.
func (c *leaseController) run(ctx context.Context) {
	c.log.Info("Starting node lease controller", "renewInterval", c.renewInterval, "leaseDurationSeconds", c.durationSeconds)
	runJittered(ctx, c.clock, c.renewInterval, c.sync)
	c.log.Info("Stopped node lease controller")
}

// sync is one renewal: the cheap PUT of the cached lease, else GET (and
// create on 404) and then the update routine.
func (c *leaseController) sync(ctx context.Context) {
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
			c.log.Error("Will retry updating lease", "err", err, "interval", c.renewInterval)
		}
	}
}

// backoffEnsure calls ensure until it succeeds, sleeping 200ms, 400ms, ...
// up to 7s between attempts. It returns nil when ctx ends, or when the lease
// is missing and cannot be created yet (no Node to own it).
func (c *leaseController) backoffEnsure(ctx context.Context) (*coordinationv1.Lease, bool) {
	wait := backoffStart
	for {
		lease, created, err := c.ensure(ctx)
		if err == nil {
			return lease, created
		}
		if ctx.Err() != nil {
			return nil, false
		}
		wait = nextBackoff(wait)
		c.log.Error("Failed to ensure lease exists, will retry", "err", err, "interval", wait)
		if !sleep(ctx, c.clock, wait) {
			return nil, false
		}
	}
}

// ensure GETs the lease and creates it on 404. A lease that cannot get its
// owner reference yet is not created this round, and that is not an error:
// the next renewal tries again (the kubelet's behaviour, so that a lease
// never exists without an owner that the garbage collector can follow).
func (c *leaseController) ensure(ctx context.Context) (lease *coordinationv1.Lease, created bool, err error) {
	lease, err = c.leases.Get(ctx, c.nodeName, metav1.GetOptions{})
	switch {
	case err == nil:
		return lease, false, nil
	case !apierrors.IsNotFound(err):
		return nil, false, fmt.Errorf("get lease %s/%s: %w", corev1.NamespaceNodeLease, c.nodeName, err)
	}
	fresh, err := c.prepare(ctx, nil)
	if err != nil {
		return nil, false, nil
	}
	lease, err = c.leases.Create(ctx, fresh, metav1.CreateOptions{})
	if err != nil {
		return nil, false, fmt.Errorf("create lease %s/%s: %w", corev1.NamespaceNodeLease, c.nodeName, err)
	}
	c.log.Info("Created node lease", "uid", lease.UID, "ownerUID", ownerUID(lease))
	return lease, true, nil
}

// retryUpdate PUTs a renewal of base up to maxUpdateRetries times. A 409
// means base is stale (someone else wrote, or the lease was deleted and the
// uid precondition failed): it GETs the current lease and retries from it.
func (c *leaseController) retryUpdate(ctx context.Context, base *coordinationv1.Lease) error {
	for attempt := range maxUpdateRetries {
		if ctx.Err() != nil {
			return fmt.Errorf("renew lease: %w", ctx.Err())
		}
		lease, err := c.prepare(ctx, base)
		if err != nil {
			c.log.Error("Failed to prepare lease", "err", err)
			continue
		}
		start := c.clock.Now()
		updated, err := c.leases.Update(ctx, lease, metav1.UpdateOptions{})
		if c.onRenew != nil {
			c.onRenew(c.clock.Since(start), err)
		}
		if err == nil {
			c.latest = updated
			return nil
		}
		c.log.Error("Failed to update lease", "err", err, "attempt", attempt+1)
		if apierrors.IsConflict(err) {
			base, _ = c.backoffEnsure(ctx)
			continue
		}
		if attempt > 0 && c.onRepeatedFail != nil {
			c.onRepeatedFail()
		}
	}
	return fmt.Errorf("failed %d attempts to update lease", maxUpdateRetries)
}

// prepare builds the lease to write from base (nil: a fresh one) and, if it
// has no owner yet, points it at the Node, which takes a GET. The GET fails
// while the Node is not registered yet or after it was deleted.
func (c *leaseController) prepare(ctx context.Context, base *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	lease := buildLease(base, c.nodeName, c.durationSeconds, c.clock.Now())
	if !needsOwnerReference(lease) {
		return lease, nil
	}
	node, err := c.client.CoreV1().Nodes().Get(ctx, c.nodeName, metav1.GetOptions{})
	if err != nil {
		c.log.Error("Failed to get node when trying to set owner ref to the node lease", "err", err)
		return nil, fmt.Errorf("get node %q for the lease's owner reference: %w", c.nodeName, err)
	}
	lease.OwnerReferences = []metav1.OwnerReference{nodeOwnerReference(node)}
	return lease, nil
}

func ownerUID(lease *coordinationv1.Lease) string {
	if len(lease.OwnerReferences) == 0 {
		return ""
	}
	return string(lease.OwnerReferences[0].UID)
}
