package election

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// reconcile runs one step of the election for key and says when to look
// again (0: only on the next event). Steps never block waiting for
// candidates: a ping is answered by a candidate renewal, which is an event
// that queues the Lease again, and the requeue bounds the wait.
func (c *Controller) reconcile(ctx context.Context, key leaseKey) (time.Duration, error) {
	now := c.now()
	cands := admissible(c.candidates(key.namespace), key.name, now, c.cfg.CandidateValidity)
	if len(cands) == 0 {
		return 0, nil
	}
	lease := c.lease(key)
	if !c.electionNeeded(lease, cands, now) {
		return c.untilExpiry(lease, now), nil
	}

	acked, pinged, err := c.ping(ctx, cands, now)
	if err != nil {
		return 0, err
	}
	if pinged {
		// Give the candidates the election duration to answer.
		return c.cfg.ElectionDuration, nil
	}
	acked = withSittingHolder(acked, cands, lease, now)
	if len(acked) == 0 {
		c.log.Info("no candidate answered; waiting", "lease", key.String(), "candidates", len(cands))
		return c.cfg.RequeueInterval, nil
	}
	strategy, err := pickStrategy(acked)
	if err != nil {
		c.log.Warn("cannot choose a strategy", "lease", key.String(), "err", err)
		return c.cfg.RequeueInterval, nil
	}
	if strategy != coordinationv1.OldestEmulationVersion {
		// Another controller implements this strategy (KEP-4355 allows
		// third-party strategies).
		return 0, nil
	}
	electee := pickOldestEmulationVersion(acked)
	if electee == nil {
		return c.cfg.RequeueInterval, nil
	}
	if lease == nil {
		return c.createLease(ctx, key, electee.Name, strategy, now)
	}
	return c.updateLease(ctx, lease, electee.Name, strategy, now)
}

// electionNeeded follows kube-apiserver: the Lease is missing, expired or
// free; a candidate is half-way to being collected and must be pinged to
// renew; or the best candidate is not the holder.
func (c *Controller) electionNeeded(lease *coordinationv1.Lease, cands []*coordinationv1beta1.LeaseCandidate, now time.Time) bool {
	if lease == nil || expired(lease, now) || holder(lease) == "" {
		return true
	}
	for _, cand := range cands {
		if cand.Spec.RenewTime.Add(c.cfg.CandidateValidity / 2).Before(now) {
			return true
		}
	}
	strategy, err := pickStrategy(cands)
	if err != nil || strategy != coordinationv1.OldestEmulationVersion {
		return false
	}
	best := pickOldestEmulationVersion(cands)
	if best == nil {
		return false
	}
	// A hand-over requested earlier to a candidate that is no longer the
	// best (it left) is withdrawn by the election.
	stalePreferred := lease.Spec.PreferredHolder != nil && *lease.Spec.PreferredHolder != best.Name
	return best.Name != holder(lease) || stalePreferred
}

// withSittingHolder adds the candidate of a live Lease's holder to the
// candidates that answered the latest ping. The holder proves it is alive
// by renewing the Lease itself; a slow answer to a ping must not leave it
// out of the choice, or the best of the others (say a newer emulation
// version) would be asked to displace a holder that ranks before it.
func withSittingHolder(acked, cands []*coordinationv1beta1.LeaseCandidate, lease *coordinationv1.Lease, now time.Time) []*coordinationv1beta1.LeaseCandidate {
	h := holder(lease)
	if h == "" || expired(lease, now) {
		return acked
	}
	for _, cand := range acked {
		if cand.Name == h {
			return acked
		}
	}
	for _, cand := range cands {
		if cand.Name == h {
			return append(acked, cand)
		}
	}
	return acked
}

// untilExpiry is when to look at a held Lease again: at its expiry if that
// comes before the regular requeue, so that a dead holder is replaced
// without waiting for an event that will never come.
func (c *Controller) untilExpiry(lease *coordinationv1.Lease, now time.Time) time.Duration {
	d := c.cfg.RequeueInterval
	if lease != nil && lease.Spec.RenewTime != nil && lease.Spec.LeaseDurationSeconds != nil {
		left := lease.Spec.RenewTime.Add(time.Duration(*lease.Spec.LeaseDurationSeconds)*time.Second).Sub(now) + 10*time.Millisecond
		if left > 0 && left < d {
			d = left
		}
	}
	return d
}

// ping asks every candidate that has not renewed within the election
// duration to renew, unless an earlier ping is still unanswered and recent.
// It returns the candidates that count as having answered, and whether it
// sent any ping (then the election waits for the answers).
func (c *Controller) ping(ctx context.Context, cands []*coordinationv1beta1.LeaseCandidate, now time.Time) (acked []*coordinationv1beta1.LeaseCandidate, pinged bool, err error) {
	for _, cand := range cands {
		if cand.Spec.RenewTime.Add(c.cfg.ElectionDuration).After(now) {
			acked = append(acked, cand)
			continue
		}
		pt := cand.Spec.PingTime
		if pt != nil && pt.Add(c.cfg.ElectionDuration).After(now) && cand.Spec.RenewTime.Before(pt) {
			// Pinged within the election duration and not answered yet:
			// the election waits for it, or the first candidate to answer
			// would be elected over an older one still answering.
			pinged = true
			continue
		}
		// A ping that is older than the election duration and was
		// answered (renewTime >= pingTime) is replaced; an unanswered
		// old one means the candidate is gone: it is not pinged again
		// and simply does not take part.
		if pt == nil || (pt.Add(c.cfg.ElectionDuration).Before(now) && !cand.Spec.RenewTime.Before(pt)) {
			cp := cand.DeepCopy()
			cp.Spec.PingTime = &metav1.MicroTime{Time: now}
			if _, err := c.client.CoordinationV1beta1().LeaseCandidates(cp.Namespace).Update(ctx, cp, metav1.UpdateOptions{}); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return nil, false, fmt.Errorf("ping candidate %s/%s: %w", cand.Namespace, cand.Name, err)
			}
			pinged = true
		}
	}
	return acked, pinged, nil
}

func (c *Controller) createLease(ctx context.Context, key leaseKey, electee string, strategy coordinationv1.CoordinatedLeaseStrategy, now time.Time) (time.Duration, error) {
	dur := c.cfg.LeaseDurationSeconds
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.namespace, Name: key.name},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       &electee,
			LeaseDurationSeconds: &dur,
			RenewTime:            &metav1.MicroTime{Time: now},
			Strategy:             &strategy,
		},
	}
	if _, err := c.client.CoordinationV1().Leases(key.namespace).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		// AlreadyExists: the cache was behind; retry from a fresher read.
		return 0, fmt.Errorf("create lease %s for %s: %w", key, electee, err)
	}
	c.log.Info("elected", "lease", key.String(), "holder", electee, "created", true)
	return c.cfg.RequeueInterval, nil
}

// updateLease hands an expired or free Lease to the electee, or asks a live
// holder to end its term by naming the electee as preferredHolder.
func (c *Controller) updateLease(ctx context.Context, cached *coordinationv1.Lease, electee string, strategy coordinationv1.CoordinatedLeaseStrategy, now time.Time) (time.Duration, error) {
	lease := cached.DeepCopy()
	old := holder(lease)
	changed := false
	switch {
	case old == "" || (expired(lease, now) && old != electee):
		dur := c.cfg.LeaseDurationSeconds
		lease.Spec.HolderIdentity = &electee
		lease.Spec.PreferredHolder = nil
		lease.Spec.LeaseDurationSeconds = &dur
		lease.Spec.RenewTime = &metav1.MicroTime{Time: now}
		lease.Spec.AcquireTime = nil
		var transitions int32
		if lease.Spec.LeaseTransitions != nil {
			transitions = *lease.Spec.LeaseTransitions
		}
		transitions++
		lease.Spec.LeaseTransitions = &transitions
		changed = true
	case old != electee:
		if p := lease.Spec.PreferredHolder; p == nil || *p != electee {
			lease.Spec.PreferredHolder = &electee
			changed = true
		}
	case lease.Spec.PreferredHolder != nil:
		// The holder is the best again: withdraw the hand-over request.
		lease.Spec.PreferredHolder = nil
		changed = true
	}
	if s := lease.Spec.Strategy; s == nil || *s != strategy {
		lease.Spec.Strategy = &strategy
		changed = true
	}
	if !changed {
		return c.untilExpiry(lease, now), nil
	}
	if _, err := c.client.CoordinationV1().Leases(lease.Namespace).Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		return 0, fmt.Errorf("update lease %s/%s for %s: %w", lease.Namespace, lease.Name, electee, err)
	}
	if holder(lease) == electee && old != electee {
		c.log.Info("elected", "lease", lease.Namespace+"/"+lease.Name, "holder", electee, "previousHolder", old)
	} else if old != electee {
		c.log.Info("end of term requested", "lease", lease.Namespace+"/"+lease.Name, "holder", old, "preferredHolder", electee)
	}
	return c.untilExpiry(lease, now), nil
}

// candidates lists the LeaseCandidates of a namespace from the watch cache
// (shared objects: read only).
func (c *Controller) candidates(namespace string) []*coordinationv1beta1.LeaseCandidate {
	objs, _ := c.cache.List(c.cands.KeyPrefix(namespace), nil)
	out := make([]*coordinationv1beta1.LeaseCandidate, 0, len(objs))
	for _, o := range objs {
		if cand, ok := o.(*coordinationv1beta1.LeaseCandidate); ok {
			out = append(out, cand)
		}
	}
	return out
}

// lease reads a Lease from the watch cache (shared: read only); nil when
// it does not exist.
func (c *Controller) lease(key leaseKey) *coordinationv1.Lease {
	o, ok := c.cache.Get(c.leases.Key(key.namespace, key.name))
	if !ok {
		return nil
	}
	return asLease(o)
}

func asLease(o runtime.Object) *coordinationv1.Lease {
	l, _ := o.(*coordinationv1.Lease)
	return l
}

// expired: renewTime + leaseDurationSeconds has passed on the server's
// clock (a Lease without either is expired), as kube-apiserver judges it.
func expired(l *coordinationv1.Lease, now time.Time) bool {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return true
	}
	return l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second).Before(now)
}

func holder(l *coordinationv1.Lease) string {
	if l == nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}
