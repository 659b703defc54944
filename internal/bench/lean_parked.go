package bench

import (
	"context"
	"fmt"
	"net/http"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// lean_parked.go keeps each node's lease, between two renewals, as the
// bytes of the answer that brought it, not decoded.
//
// A decoded Lease is some twenty heap objects, and a fleet run holds one
// per simulated node for the whole run: the generator's collector marked
// them all on every cycle, on the one core the generator is pinned to
// (scripts/bench-rate.sh PIN=1), and every cycle showed in the latency it
// measures. `bench rate` with 60,000 nodes against the trivial handler
// (`bench baseline`, 6,000 renewals/s), GODEBUG=gctrace=1: a cycle every
// 7 s whose marking took 125-213 ms, and each one made its second's p99
// 70-121 ms where the others were 2-4 ms; the whole run's p99 was 37 ms for
// a server answering in well under a millisecond. Parked, a lease is one
// []byte without pointers, which the collector does not scan: the
// generator's live heap went from 59 to 41 MB and its marks to 68-100 ms,
// and with GOGC=1600 (cmd/leasehold/gc.go) the run's p99 to 8.8 ms. A renewal
// decodes it into its goroutine's one scratch Lease, sets renewTime and
// encodes that, where it used to decode the answer and encode the lease:
// the same work, and the same bytes on the wire as the typed client's.
// An answer that does not decode shows at the next renewal, as an error of
// that renewal.

// leaseParker is a Lease API that renews a slot's lease from the slot's
// parked answer (leaseSlot.parked) and parks the new answer, instead of
// Update's decoded lease. Like Update, on failure the slot is unchanged.
type leaseParker interface {
	renewParked(ctx context.Context, auth authorization, slot *leaseSlot, renewTime time.Time) error
}

var _ leaseParker = (*leanLeases)(nil)

// renewParked implements leaseParker: a PUT of the slot's lease (slot.lease
// when the slot holds a decoded one, as after setup or a refresh, else its
// parked answer) with renewTime.
func (l *leanLeases) renewParked(ctx context.Context, auth authorization, slot *leaseSlot, renewTime time.Time) error {
	lease := slot.lease
	if lease == nil {
		var err error
		if lease, err = l.unpark(slot.parked); err != nil {
			return fmt.Errorf("lease %s/%s: %w", l.namespace, slot.name, err)
		}
	}
	lease.Spec.RenewTime = &metav1.MicroTime{Time: renewTime}
	u := l.conn.urls.get(l.namespace, lease.Name)
	contentType, err := l.send(ctx, auth, http.MethodPut, u, lease.Name, lease)
	if err != nil {
		return err
	}
	if contentType != l.conn.mediaType {
		// Parked bytes are decoded as the media type asked for; anything
		// else stays decoded.
		out, err := l.decodeLease(contentType, http.MethodPut, u)
		if err != nil {
			return err
		}
		slot.lease = out
		return nil
	}
	slot.parked = append(slot.parked[:0], l.in.Bytes()...)
	slot.lease = nil
	return nil
}

// unpark decodes a parked answer into the scratch lease, which it returns.
func (l *leanLeases) unpark(parked []byte) (*coordinationv1.Lease, error) {
	lease, err := decodeLeaseInto(l.conn.decoder, parked, &l.scratch)
	if err != nil {
		return nil, fmt.Errorf("the parked answer: %w", err)
	}
	return lease, nil
}
