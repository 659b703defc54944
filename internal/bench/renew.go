package bench

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxRenewAttempts bounds the updates one renewal makes when it keeps
// meeting conflicts, as the kubelet's lease controller does (5 tries).
const maxRenewAttempts = 5

// renewer carries out renewals the kubelet way: update the cached lease with
// a fresh renewTime, keeping the resourceVersion of the last response, with
// no GET first. A 409 means another writer got in between: read the lease
// and try again. A 404 means the lease is gone: create it again.
type renewer struct {
	cfg Config
	rec *Recorder
}

// renew renews the slot's lease and reports the result to the recorder. It
// returns false when the renewal failed for a reason other than a conflict,
// so that a caller renewing back to back can back off instead of spinning
// against a server that is down. Errors seen after ctx is cancelled are not
// the server's and are not counted.
func (r *renewer) renew(ctx context.Context, leases leaseAPI, slot *leaseSlot) bool {
	for range maxRenewAttempts {
		err := r.update(ctx, leases, slot)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return true
		}
		r.failed(slot, "update", err)
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return false
		}
		if err := r.refresh(ctx, leases, slot); err != nil {
			if ctx.Err() == nil {
				r.failed(slot, "refresh", err)
			}
			return false
		}
	}
	return true
}

// update sends one update with a fresh renewTime and records its latency
// when it succeeds: from the slot's parked answer when leases keeps one
// (lean_parked.go), else from its decoded lease.
func (r *renewer) update(ctx context.Context, leases leaseAPI, slot *leaseSlot) error {
	rctx, cancel := context.WithTimeout(ctx, r.cfg.RequestTimeout)
	defer cancel()
	start := time.Now()
	var err error
	if p, ok := leases.(leaseParker); ok {
		err = p.renewParked(rctx, slot.auth, slot, start)
	} else {
		slot.lease.Spec.RenewTime = &metav1.MicroTime{Time: start}
		var out *coordinationv1.Lease
		if out, err = leases.Update(rctx, slot.auth, slot.lease); err == nil {
			slot.lease = out
		}
	}
	took := time.Since(start)
	if err != nil {
		return err
	}
	r.rec.Success(took)
	return nil
}

// refresh replaces the slot's cached lease with the server's, recreating the
// lease if it has been deleted.
func (r *renewer) refresh(ctx context.Context, leases leaseAPI, slot *leaseSlot) error {
	rctx, cancel := context.WithTimeout(ctx, r.cfg.RequestTimeout)
	defer cancel()
	current, err := leases.Get(rctx, slot.auth, slot.name)
	if apierrors.IsNotFound(err) {
		current, err = leases.Create(rctx, slot.auth, newLease(r.cfg.Namespace, slot, r.cfg.LeaseDurationSeconds, time.Now()))
	}
	if err != nil {
		return fmt.Errorf("refreshing lease %s/%s: %w", r.cfg.Namespace, slot.name, err)
	}
	slot.lease = current
	return nil
}

// failed counts a failure and logs the first one of each kind with its
// message: the counts say how often, the log line says why.
func (r *renewer) failed(slot *leaseSlot, op string, err error) {
	kind := ErrorKind(err)
	if r.rec.Failure(kind) {
		r.cfg.Logger.Warn("first error of its kind", "kind", kind, "op", op, "lease", slot.name, "err", err)
	}
}
