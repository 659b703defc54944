package dashboard

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
)

// NodeLeaseNamespace holds one lease per node; every other namespace's
// leases are treated as leader-election leases.
const NodeLeaseNamespace = corev1.NamespaceNodeLease

// leaseKey names a lease.
type leaseKey struct{ ns, name string }

// leaseRecord is what the dashboard keeps of one Lease: the spec fields it
// shows plus what it observed about renewals. It holds no API object.
type leaseRecord struct {
	key         leaseKey
	holder      string
	preferred   string
	renew       time.Time
	acquire     time.Time
	duration    time.Duration
	transitions int32
	labels      map[string]string
	owner       *ownerRecord

	// lateAt is when a renewal last arrived later than 1.5 renew
	// intervals after the one before it, lateGap that gap.
	lateAt  time.Time
	lateGap time.Duration
	// skew is renewTime minus the time the renewal was observed, at the
	// last renewal seen through the watch (not on the initial list).
	skew time.Duration
	// pos is the record's index in Fleet.sorted and Fleet.hot, while the
	// Fleet is not dirty.
	pos int
}

// ownerRecord is a lease's first ownerReference.
type ownerRecord struct {
	kind, name string
}

func newLeaseRecord(l *coordinationv1.Lease) *leaseRecord {
	r := &leaseRecord{key: leaseKey{l.Namespace, l.Name}, labels: l.Labels}
	s := &l.Spec
	if s.HolderIdentity != nil {
		r.holder = *s.HolderIdentity
	}
	if s.PreferredHolder != nil {
		r.preferred = *s.PreferredHolder
	}
	if s.RenewTime != nil {
		r.renew = s.RenewTime.Time
	}
	if s.AcquireTime != nil {
		r.acquire = s.AcquireTime.Time
	}
	if s.LeaseDurationSeconds != nil {
		r.duration = time.Duration(*s.LeaseDurationSeconds) * time.Second
	}
	if s.LeaseTransitions != nil {
		r.transitions = *s.LeaseTransitions
	}
	if len(l.OwnerReferences) > 0 {
		o := l.OwnerReferences[0]
		r.owner = &ownerRecord{kind: o.Kind, name: o.Name}
	}
	return r
}

// nodeRecord is what the dashboard keeps of one Node.
type nodeRecord struct {
	ready  corev1.ConditionStatus // "" when the Node has no Ready condition
	taints []string
	labels map[string]string
	// flips are the times the Ready status changed, newest last, within
	// flapWindow.
	flips []time.Time
}

func newNodeRecord(n *corev1.Node) *nodeRecord {
	r := &nodeRecord{labels: n.Labels}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			r.ready = c.Status
		}
	}
	for _, t := range n.Spec.Taints {
		s := t.Key
		if t.Value != "" {
			s += "=" + t.Value
		}
		r.taints = append(r.taints, s+":"+string(t.Effect))
	}
	return r
}
