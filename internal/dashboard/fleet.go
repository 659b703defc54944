package dashboard

import (
	"cmp"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
)

const (
	// flapWindow and flapThreshold: a node whose Ready status changed
	// flapThreshold times within flapWindow is flapping.
	flapWindow    = 10 * time.Minute
	flapThreshold = 3
	// lateWindow is how long a late renewal stays on the attention list.
	lateWindow = 10 * time.Minute
	// SkewThreshold is how far a renewTime may be from the moment the
	// dashboard saw the renewal before the holder's clock looks skewed.
	// It is larger than a watch event's delivery time on a loaded server.
	SkewThreshold = 5 * time.Second
)

// Fleet is the dashboard's model of the cluster, fed by informer callbacks
// and read by the ticker. All methods are safe for concurrent use.
type Fleet struct {
	clock clock.PassiveClock

	mu     sync.Mutex
	leases map[leaseKey]*leaseRecord
	nodes  map[string]*nodeRecord
	// leaders holds the history of every lease outside kube-node-lease,
	// including leases known only from LeaderElection events.
	leaders map[leaseKey]*leaderHistory
	// nodesKnown is set once the Node list has been read, so that a lease
	// whose owner Node is missing can be called orphaned.
	nodesKnown bool
	// sorted is every lease ordered by namespace then name, and nodeLeases
	// its kube-node-lease part, sorted[nodeLo:nodeHi] (the heat map's cell
	// order); hot is each sorted lease's renewal, dense, in the same order,
	// kept current by SetLease. All are rebuilt by the next reader after
	// leases come or go (dirty).
	sorted, nodeLeases []*leaseRecord
	hot                []leaseHot
	nodeLo, nodeHi     int
	dirty              bool
	// notReady counts the Nodes whose Ready condition is not True, and
	// flapping holds those with flapThreshold Ready changes, both kept by
	// SetNode and DeleteNode, so that a tick does not walk every Node.
	notReady int
	flapping map[string]*nodeRecord
	// layout counts the rebuilds of nodeLeases: heat maps of one layout
	// have the same lease in each cell, so one can be sent as a delta of
	// the other.
	layout uint64
}

// NewFleet returns an empty Fleet reading time from clk.
func NewFleet(clk clock.PassiveClock) *Fleet {
	return &Fleet{
		clock:    clk,
		leases:   map[leaseKey]*leaseRecord{},
		nodes:    map[string]*nodeRecord{},
		leaders:  map[leaseKey]*leaderHistory{},
		flapping: map[string]*nodeRecord{},
	}
}

// SetLease records a lease as added or updated.
func (f *Fleet) SetLease(l *coordinationv1.Lease) {
	r := newLeaseRecord(l)
	now := f.clock.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setRecord(r, now)
}

// applyLeases applies a batch of watch events, seen at one moment.
func (f *Fleet) applyLeases(batch []leaseEvent) {
	now := f.clock.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range batch {
		if batch[i].deleted {
			f.deleteLease(batch[i].rec.key)
		} else {
			f.setRecord(&batch[i].rec, now)
		}
	}
}

// replaceLeases applies a list: recs are added or updated, and every
// other lease is forgotten.
func (f *Fleet) replaceLeases(recs []leaseRecord) {
	now := f.clock.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	listed := make(map[leaseKey]bool, len(recs))
	for i := range recs {
		f.setRecord(&recs[i], now)
		listed[recs[i].key] = true
	}
	for k := range f.leases {
		if !listed[k] {
			f.deleteLease(k)
		}
	}
}

// setRecord records r (which it copies) as added or updated at now. f.mu
// is held.
func (f *Fleet) setRecord(r *leaseRecord, now time.Time) {
	old := f.leases[r.key]
	if old != nil {
		r.lateAt, r.lateGap, r.skew = old.lateAt, old.lateGap, old.skew
		observeRenewal(old, r, now)
	}
	if r.key.ns != NodeLeaseNamespace {
		f.leader(r.key).observe(old, r, now)
	}
	if old == nil {
		rec := new(leaseRecord)
		*rec = *r
		f.leases[r.key] = rec
		f.dirty = true
		return
	}
	// In place: the sorted views point at the record, and are rebuilt
	// only when leases come or go.
	r.pos = old.pos
	*old = *r
	if !f.dirty {
		f.hot[old.pos] = hotOf(old)
	}
}

// leaseHot is what a tick reads of every lease, in Fleet.hot.
type leaseHot struct {
	beat
	// attn marks a lease that may be on the attention list (late, skewed,
	// or an identity lease): a tick looks at the records of these only.
	attn bool
}

func hotOf(r *leaseRecord) leaseHot {
	_, identity := r.labels[identityLabel]
	return leaseHot{beat: beatOf(r.renew, r.duration),
		attn: !r.lateAt.IsZero() || absDuration(r.skew) > SkewThreshold || identity && r.key.ns == identityNamespace}
}

// observeRenewal notes a late arrival and the clock skew when r renews
// what old held.
func observeRenewal(old, r *leaseRecord, now time.Time) {
	if r.renew.IsZero() || !r.renew.After(old.renew) {
		return
	}
	r.skew = r.renew.Sub(now)
	if old.renew.IsZero() || old.holder != r.holder || r.duration <= 0 {
		return
	}
	// Renewers renew every quarter of the duration (kubelet), or more
	// often (client-go's retry period); 1.5 intervals means one was missed.
	if gap := r.renew.Sub(old.renew); gap > r.duration*3/8 {
		r.lateAt, r.lateGap = now, gap
	}
}

// DeleteLease forgets a lease (its leader history stays).
func (f *Fleet) DeleteLease(ns, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleteLease(leaseKey{ns, name})
}

// deleteLease forgets a lease. f.mu is held.
func (f *Fleet) deleteLease(k leaseKey) {
	if _, ok := f.leases[k]; ok {
		delete(f.leases, k)
		f.dirty = true
	}
}

// SetNode records a node as added or updated.
func (f *Fleet) SetNode(n *corev1.Node) {
	r := newNodeRecord(n)
	now := f.clock.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.nodes[n.Name]
	if old != nil {
		r.flips = old.flips
		if old.ready != r.ready && old.ready != "" && r.ready != "" {
			r.flips = append(r.flips, now)
		}
		for len(r.flips) > 0 && now.Sub(r.flips[0]) > flapWindow {
			r.flips = r.flips[1:]
		}
	}
	f.forgetNode(n.Name, old)
	f.nodes[n.Name] = r
	if r.ready != corev1.ConditionTrue {
		f.notReady++
	}
	if len(r.flips) >= flapThreshold {
		f.flapping[n.Name] = r
	}
}

// DeleteNode forgets a node.
func (f *Fleet) DeleteNode(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forgetNode(name, f.nodes[name])
	delete(f.nodes, name)
}

// forgetNode takes old, the record of Node name (nil if none), out of the
// counts. f.mu is held.
func (f *Fleet) forgetNode(name string, old *nodeRecord) {
	if old == nil {
		return
	}
	if old.ready != corev1.ConditionTrue {
		f.notReady--
	}
	delete(f.flapping, name)
}

// NodesKnown says the Node list has been read (or, with false, that it
// cannot be), which decides whether missing owners mean orphaned leases.
func (f *Fleet) NodesKnown(known bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodesKnown = known
}

// order rebuilds the sorted views if leases came or went. f.mu is held.
func (f *Fleet) order() {
	if !f.dirty {
		return
	}
	f.sorted = f.sorted[:0]
	for _, r := range f.leases {
		f.sorted = append(f.sorted, r)
	}
	slices.SortFunc(f.sorted, func(a, b *leaseRecord) int {
		return cmp.Or(cmp.Compare(a.key.ns, b.key.ns), cmp.Compare(a.key.name, b.key.name))
	})
	lo, hi := f.namespace(NodeLeaseNamespace)
	f.nodeLeases = f.sorted[lo:hi:hi]
	f.nodeLo, f.nodeHi = lo, hi
	f.hot = slices.Grow(f.hot[:0], len(f.sorted))[:len(f.sorted)]
	for i, r := range f.sorted {
		r.pos = i
		f.hot[i] = hotOf(r)
	}
	f.dirty = false
	f.layout++
}

// namespace is the range of f.sorted holding namespace ns.
func (f *Fleet) namespace(ns string) (lo, hi int) {
	lo, _ = slices.BinarySearchFunc(f.sorted, ns, func(r *leaseRecord, ns string) int { return cmp.Compare(r.key.ns, ns) })
	hi = lo
	for hi < len(f.sorted) && f.sorted[hi].key.ns == ns {
		hi++
	}
	return lo, hi
}

// orphaned says whether r's owner is a Node that is known not to exist.
// f.mu is held.
func (f *Fleet) orphaned(r *leaseRecord) bool {
	if r.owner == nil || r.owner.kind != "Node" || !f.nodesKnown {
		return false
	}
	_, ok := f.nodes[r.owner.name]
	return !ok
}
