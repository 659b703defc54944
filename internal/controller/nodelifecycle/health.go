package nodelifecycle

import (
	"context"
	"fmt"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reasons and messages of the conditions the controller writes (reference §3.2).
const (
	reasonUnknown       = "NodeStatusUnknown"
	messageUnknown      = "Kubelet stopped posting node status."
	reasonNeverUpdated  = "NodeStatusNeverUpdated"
	messageNeverUpdated = "Kubelet never posted node status."
)

// timedOutConditions are the conditions set to Unknown when a node goes
// silent. NetworkUnavailable is left alone: the control plane owns it.
var timedOutConditions = []corev1.NodeConditionType{
	corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure,
}

// nodeHealth is what the controller remembers of one node between passes.
// It holds times by value, not the status or lease it saw: those pointers
// kept a superseded version of a node's objects alive for as long as the
// controller remembered it, though only these times are ever compared. The
// times are stamps, not time.Time (24 bytes and a pointer each): with one
// record per node they were most of the controller's memory.
type nodeHealth struct {
	// readySeen says the status last seen (or written) had a Ready
	// condition; heartbeat is that condition's lastHeartbeatTime.
	readySeen bool
	heartbeat stamp
	// probe is when the controller last saw the node show a sign of life
	// (a new heartbeat or renewTime), on its monotonic clock: ages are
	// judged from the observation, never from the node's own stamps, so
	// wall-clock steps on either side change nothing (upstream's
	// nodeHealth.probeTimestamp, measured monotonically).
	probe mono
	// lease is the node lease's renewTime last seen to advance.
	lease leaseMark
}

// leaseMark is the renewTime of the node lease the controller last saw
// advance: seen is false until a lease is seen, and renewed false if that
// lease had no renewTime. rev is the store revision of the lease last read,
// advanced or not: a lease still at rev is not read again.
type leaseMark struct {
	seen, renewed bool
	renewTime     stamp
	rev           int64
}

// markOf is the mark of lease l.
func markOf(l *coordinationv1.Lease) leaseMark {
	m := leaseMark{seen: true, renewed: l.Spec.RenewTime != nil}
	if m.renewed {
		m.renewTime = stampOf(l.Spec.RenewTime.Time)
	}
	return m
}

// mono is a reading of Config.Monotonic: time since the controller started.
type mono time.Duration

// stamp is a time as Unix nanoseconds, 0 for the zero time. Equal stamps
// are equal times (the API's times are whole seconds or microseconds).
type stamp int64

func stampOf(t time.Time) stamp {
	if t.IsZero() {
		return 0
	}
	return stamp(t.UnixNano())
}

// withReady returns h remembering ready (nil: the status had no Ready condition).
func (h nodeHealth) withReady(ready *corev1.NodeCondition) nodeHealth {
	h.readySeen = ready != nil
	h.heartbeat = 0
	if ready != nil {
		h.heartbeat = stampOf(ready.LastHeartbeatTime.Time)
	}
	return h
}

func readyCondition(s *corev1.NodeStatus) *corev1.NodeCondition {
	return condition(s, corev1.NodeReady)
}

func condition(s *corev1.NodeStatus, t corev1.NodeConditionType) *corev1.NodeCondition {
	if s == nil {
		return nil
	}
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// healthUpdate is what one look at a node (assessHealth) decided: its
// Ready condition as observed and as it is after the look, and the status
// to write when the node timed out.
type healthUpdate struct {
	node     *nodeView
	observed corev1.NodeCondition
	// current is the Ready condition after the look (nil if the node has
	// none): observed, or when write is set write's, which holds until the
	// write is known to have failed.
	current *corev1.NodeCondition
	// write is a copy of node with its timed-out conditions Unknown, to be
	// written (nil if nothing changes); written is the health to remember
	// once it is.
	write   *corev1.Node
	written *nodeHealth
	// err is the write's outcome, set by whoever wrote it.
	err error
}

// assessHealth is one look at node v: it refreshes v's probe timestamp from
// its Ready heartbeat and its lease, and once the grace period has passed
// without a sign of life it marks the timed-out conditions Unknown in a copy
// of the node object for the caller to write. That object is full, read
// now from the cluster unless the caller has it: the view holds too little
// to write back. It keeps the view's resourceVersion, so a node that
// changed since the view was taken makes the write a conflict, retried on
// a fresh read as any conflict is. The observed Ready condition is a
// stand-in Unknown one if v never posted one. The decision is written to
// *u, one element of a buffer the pass allocates at once, so that looking
// at a healthy node allocates nothing.
func (c *Controller) assessHealth(v *nodeView, full *corev1.Node, u *healthUpdate) {
	c.assessHealthOf(v, c.nodes.at(c.nodes.slot(v.name)), full, u)
}

// assessHealthOf is assessHealth given v's state in the node table.
func (c *Controller) assessHealthOf(v *nodeView, st *nodeState, full *corev1.Node, u *healthUpdate) {
	// One clock read per node, as before: the wall clock is read only for
	// the rare node that needs it (never posted, or silent).
	seen := mono(c.cfg.Monotonic())
	h, known := st.health, st.hasHealth
	// Whatever happens below, remember what was seen.
	defer func() { st.health, st.hasHealth = h, true }()

	*u = healthUpdate{node: v}
	grace := c.cfg.GracePeriod
	if v.hasReady {
		// Until a write replaces it, the condition after the look is the
		// one observed.
		u.observed = v.readyCondition()
		u.current = &u.observed
	} else {
		// Never posted: judge from the creation time, with the startup grace.
		created := v.created()
		u.observed = corev1.NodeCondition{
			Type:               corev1.NodeReady,
			Status:             corev1.ConditionUnknown,
			LastHeartbeatTime:  created,
			LastTransitionTime: created,
		}
		grace = c.cfg.StartupGracePeriod
		if !known {
			// The only age taken from the wall clock: the node's, at the
			// first look, converted to the monotonic clock once.
			h = nodeHealth{probe: seen - mono(max(0, c.clock.Since(created.Time)))}
		}
		h, known = h.withReady(nil), true
	}
	current := u.current

	switch {
	case !known:
		// First look at a node that has a status: count it as alive now.
		h = nodeHealth{probe: seen}.withReady(current)
	case !h.readySeen && current != nil, h.readySeen && current == nil:
		// A first Ready condition, or (wrongly) a removed one: start afresh.
		h = nodeHealth{probe: seen, lease: h.lease}.withReady(current)
	case h.readySeen && h.heartbeat != stampOf(current.LastHeartbeatTime.Time):
		// The node posted status: a heartbeat.
		h.probe = seen
		h = h.withReady(current)
	}

	// A lease renewal is a heartbeat only if renewTime changed: a rewrite
	// with the same renewTime (or a new resourceVersion) is not one. A
	// renewTime earlier than the last is one too: the node's clock was
	// stepped back, and it is renewing all the same.
	if l, rev := c.cluster.nodeLease(v.name, h.lease.rev); l != nil {
		if renewed(l, h.lease) {
			h.lease = markOf(l)
			h.probe = seen
		}
		h.lease.rev = rev
	}

	silent := time.Duration(seen - h.probe)
	if silent <= grace {
		return
	}
	// Only silent nodes get here: copying every node on every pass cost
	// tens of megabytes of garbage per pass at 10,000 nodes.
	if full == nil {
		var ok bool
		if full, ok = c.cluster.node(v.name); !ok {
			return // deleted since the view was taken: the next pass forgets it
		}
	}
	marked := full.DeepCopy()
	if v.revision >= 0 {
		marked.ResourceVersion = strconv.FormatInt(v.revision, 10)
	}
	markUnknown(marked, metav1.NewTime(c.clock.Now()))
	u.current = readyCondition(&marked.Status)
	if equality.Semantic.DeepEqual(u.current, &u.observed) {
		return
	}
	c.log.Info("node stopped posting status", "node", v.name, "silentFor", silent.String(), "grace", grace.String())
	u.write = marked
	written := nodeHealth{probe: h.probe, lease: h.lease}.withReady(u.current)
	u.written = &written
}

// updateHealth is assessHealth with its write done at once.
func (c *Controller) updateHealth(ctx context.Context, n *corev1.Node) (observed corev1.NodeCondition, current *corev1.NodeCondition, err error) {
	var u healthUpdate
	c.assessHealth(viewOf(n), n, &u)
	if u.write == nil {
		return u.observed, u.current, nil
	}
	if err := c.cluster.updateStatus(ctx, u.write); err != nil {
		return u.observed, u.current, err
	}
	c.setHealth(n.Name, *u.written)
	return u.observed, u.current, nil
}

// setHealth remembers h as the health of node name.
func (c *Controller) setHealth(name string, h nodeHealth) {
	st := c.nodes.at(c.nodes.slot(name))
	st.health, st.hasHealth = h, true
}

// healthOf returns what the controller remembers of node name's health.
func (c *Controller) healthOf(name string) (nodeHealth, bool) {
	if st := c.nodes.get(name); st != nil && st.hasHealth {
		return st.health, true
	}
	return nodeHealth{}, false
}

// renewed reports whether l's renewTime differs from the one saved (any
// renewTime is new after no lease seen, or a lease without one).
func renewed(l *coordinationv1.Lease, saved leaseMark) bool {
	switch {
	case !saved.seen:
		return true
	case l.Spec.RenewTime == nil:
		return false
	case !saved.renewed:
		return true
	}
	return saved.renewTime != stampOf(l.Spec.RenewTime.Time)
}

// markUnknown sets every timed-out condition of n to Unknown: missing ones
// are added as never updated, others keep their heartbeat and get the
// "stopped posting" reason (reference §3.2).
func markUnknown(n *corev1.Node, now metav1.Time) {
	for _, t := range timedOutConditions {
		cond := condition(&n.Status, t)
		if cond == nil {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{
				Type:               t,
				Status:             corev1.ConditionUnknown,
				Reason:             reasonNeverUpdated,
				Message:            messageNeverUpdated,
				LastHeartbeatTime:  n.CreationTimestamp,
				LastTransitionTime: now,
			})
			continue
		}
		if cond.Status != corev1.ConditionUnknown {
			cond.Status = corev1.ConditionUnknown
			cond.Reason = reasonUnknown
			cond.Message = messageUnknown
			cond.LastTransitionTime = now
		}
	}
}

// finishHealth applies the outcome of u's write, made by the caller: the
// written health is remembered, or the update is retried with a fresh copy
// of the node from the server, up to statusRetries attempts in all,
// statusRetrySleep apart, as kube-controller-manager does.
func (c *Controller) finishHealth(ctx context.Context, u *healthUpdate) (observed corev1.NodeCondition, current *corev1.NodeCondition, err error) {
	if u.write == nil {
		return u.observed, u.current, nil
	}
	if u.err != nil {
		return c.retryHealth(ctx, u.node.name, u.observed, u.current, u.err)
	}
	c.setHealth(u.node.name, *u.written)
	return u.observed, u.current, nil
}

// retryHealth makes attempts 2..statusRetries of a node's health update
// whose first write failed with err (observed and current from it).
func (c *Controller) retryHealth(ctx context.Context, name string, observed corev1.NodeCondition, current *corev1.NodeCondition, err error) (corev1.NodeCondition, *corev1.NodeCondition, error) {
	for attempt := 1; ; attempt++ {
		if attempt == statusRetries || ctx.Err() != nil {
			return observed, current, fmt.Errorf("updating health of node %s after %d attempts: %w", name, attempt, err)
		}
		c.clock.Sleep(statusRetrySleep)
		n, ferr := c.cluster.freshNode(ctx, name)
		if ferr != nil {
			return observed, current, fmt.Errorf("re-reading node to retry its health update: %w", ferr)
		}
		if observed, current, err = c.updateHealth(ctx, n); err == nil {
			return observed, current, nil
		}
	}
}
