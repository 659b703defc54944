package elect

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Why the fencing token strictly increases across successive leaders of one
// Lease object.
//
// Every token ever handed out is the value of spec.leaseTransitions at the
// moment its leader acquired, and nothing our electors or client-go write
// ever lowers that value (renewals and releases copy it; takeovers add 1).
// Every write is a PUT with the resourceVersion just read, so it lands only
// if it is based on the latest value. Hence when an acquisition writes a
// value greater than the one it replaced, that value is greater than every
// earlier token. client-go's acquisitions come in three kinds:
//
//  1. Create (the lease did not exist): transitions 0. No token was handed
//     out for this Lease object before, so 0 is fine.
//  2. Takeover from another holder, or from the empty holder left by a
//     release: client-go writes old+1. Strictly greater.
//  3. The lease still names our own identity (a restarted elector with a
//     fixed --identity, or another process wrongly sharing it): client-go
//     treats that as a renewal and keeps old, so the previous process may
//     have handed out the very same token, and its command may even still
//     run elsewhere. Here, and generally whenever the acquiring write did
//     not increase the count, bumpTransitions writes old+1 (as a guarded
//     update, still checking that we hold the lease) before the command
//     starts.
//
// The bump makes client-go's next fast-path renewal conflict on the
// resourceVersion; client-go then re-reads the lease, sees itself as holder
// and keeps the bumped value, so no further coordination is needed.

// fencingToken returns the token for an acquisition, bumping the lease's
// transitions first when the acquisition itself did not increase them.
func fencingToken(ctx context.Context, c kubernetes.Interface, ns, name, identity string, acq acquisition, retry time.Duration) (int64, error) {
	if token, ok := acquisitionToken(acq); ok {
		return token, nil
	}
	return bumpTransitions(ctx, c, ns, name, identity, retry)
}

// acquisitionToken is the token an acquisition wrote, and false when that
// value is not known to exceed every earlier token (case 3 above).
func acquisitionToken(acq acquisition) (int64, bool) {
	written := int64(acq.written.LeaderTransitions)
	if acq.created || written > int64(acq.previous.LeaderTransitions) {
		return written, true
	}
	return 0, false
}

// bumpTransitions adds 1 to the lease's leaseTransitions if identity holds
// it, retrying conflicts and errors every retry until ctx ends.
func bumpTransitions(ctx context.Context, c kubernetes.Interface, ns, name, identity string, retry time.Duration) (int64, error) {
	leases := c.CoordinationV1().Leases(ns)
	for {
		token, err := func() (int64, error) {
			lease, err := leases.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return 0, fmt.Errorf("get lease %s/%s: %w", ns, name, err)
			}
			if h := lease.Spec.HolderIdentity; h == nil || *h != identity {
				return 0, errNotHolder
			}
			var next int32 = 1
			if t := lease.Spec.LeaseTransitions; t != nil {
				next = *t + 1
			}
			lease.Spec.LeaseTransitions = &next
			if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
				return 0, fmt.Errorf("update lease %s/%s transitions to %d: %w", ns, name, next, err)
			}
			return int64(next), nil
		}()
		if err == nil || errors.Is(err, errNotHolder) {
			return token, err
		}
		if !apierrors.IsConflict(err) {
			select {
			case <-ctx.Done():
				return 0, fmt.Errorf("bump fencing token: %w (last error: %v)", ctx.Err(), err)
			case <-time.After(retry):
			}
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("bump fencing token: %w (last error: %v)", ctx.Err(), err)
		}
	}
}

// errNotHolder: the lease was taken over before the token could be bumped.
var errNotHolder = errors.New("lease no longer held by this identity")
