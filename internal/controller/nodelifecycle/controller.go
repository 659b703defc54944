package nodelifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Controller watches node heartbeats and acts on silent nodes. Its state is
// owned by the goroutine running Run (or a test calling the passes in turn).
type Controller struct {
	cfg     Config
	clock   clock.WithTicker
	log     *slog.Logger
	cluster cluster

	// nodes holds, by name, the nodes seen in the last pass with their uid
	// (a node deleted and registered again under its name is a new node),
	// their views and the per-node bookkeeping of updateHealth.
	nodes nodeTable
	// slots are the table slots of the nodes of the current pass, in its
	// order (classify sets them; a buffer kept from pass to pass).
	slots []int32
	// pass counts monitor passes; classify marks the nodes it sees with it.
	pass uint64
	// zoneStates and tainters are per zone key.
	zoneStates map[string]zoneState
	tainters   map[string]*taintQueue
	// lastZone and lastQueue are the zone queue queue returned last:
	// almost every node of a pass is in the zone of the one before, and
	// queues are never removed, so it is looked up again only for another
	// zone.
	lastZone  string
	lastQueue *taintQueue
	// storeDown and storeOutages are what the last pass saw of
	// Config.StoreStatus (storeoutage.go).
	storeDown    bool
	storeOutages uint64
}

func newController(cfg Config, cl cluster) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	return &Controller{
		cfg:        cfg,
		clock:      cfg.Clock,
		log:        cfg.Logger,
		cluster:    cl,
		nodes:      newNodeTable(),
		zoneStates: map[string]zoneState{},
		tainters:   map[string]*taintQueue{},
	}, nil
}

// queue returns zone's NoExecute queue, creating it at the normal rate.
func (c *Controller) queue(zone string) *taintQueue {
	if c.lastQueue != nil && zone == c.lastZone {
		return c.lastQueue
	}
	q, ok := c.tainters[zone]
	defer func() { c.lastZone, c.lastQueue = zone, q }()
	if !ok {
		q = newTaintQueue(c.clock, c.cfg.EvictionRate)
		c.tainters[zone] = q
	}
	return q
}

// monitor is one health pass over every node (monitorNodeHealth): note new
// and removed nodes, update each node's health, queue or drop its NoExecute
// taint, record NodeNotReady when the controller itself found it gone, then
// judge the zones.
func (c *Controller) monitor(ctx context.Context) {
	if c.storeOutage() {
		return
	}
	start := c.clock.Now()
	if c.cfg.OnMonitorPass != nil {
		defer func() { c.cfg.OnMonitorPass(c.clock.Since(start), len(c.slots)) }()
	}
	c.classify()
	nodes := c.slots

	// Decide for a chunk of nodes on this goroutine, write its timed-out
	// statuses in parallel, then act on the outcomes in node order. Chunks
	// bound the pass's buffer: one for every node (170 bytes each) was 17 MB
	// of garbage per pass at 100,000 nodes.
	updates := make([]healthUpdate, min(len(nodes), monitorChunk))
	zones := zoneTally{counts: map[string]zoneCounts{}}
	var written []int // indexes of the nodes whose status this pass wrote
	for start := 0; start < len(nodes); start += monitorChunk {
		chunk := nodes[start:min(start+monitorChunk, len(nodes))]
		var writes []*healthUpdate
		for i, id := range chunk {
			st := c.nodes.at(id)
			c.assessHealthOf(&st.view, st, nil, &updates[i])
			if updates[i].write != nil {
				writes = append(writes, &updates[i])
				written = append(written, start+i)
			}
		}
		inParallel(len(writes), func(i int) {
			writes[i].err = c.cluster.updateStatus(ctx, writes[i].write)
		})
		for i, id := range chunk {
			c.actOnHealth(ctx, c.nodes.at(id), &updates[i], &zones)
		}
		// A pass is background work: yield between chunks (about 1.5 ms
		// of work each at 60,000 nodes) instead of holding the processor
		// for Go's 10 ms preemption slices, which on a server pinned to one
		// core queue every request behind it (see storage/embedded's
		// background.go for the measurement).
		runtime.Gosched()
	}
	c.handleDisruption(ctx, zones.done())
	// NoSchedule taints follow node changes as they are watched; going over
	// every node here too retries any write that failed then. A node this
	// pass wrote is read again (its conditions changed); the others are
	// judged as listed, which saves a lookup per node.
	c.noScheduleNodes(ctx, func(yield func(*nodeView) bool) {
		for i, id := range nodes {
			v := &c.nodes.at(id).view
			if len(written) > 0 && written[0] == i {
				written = written[1:]
				n, ok := c.cluster.node(v.name)
				if !ok {
					continue // deleted since: nothing to taint
				}
				v = viewOf(n)
			}
			if !yield(v) {
				return
			}
		}
	})
}

// monitorChunk is how many nodes a monitor pass assesses before writing
// their statuses.
const monitorChunk = 1024

// actOnHealth finishes the health update u of node st (see finishHealth),
// counts the node in its zone, and acts on its readiness: taints, and the
// NodeNotReady event when this look found it gone.
func (c *Controller) actOnHealth(ctx context.Context, st *nodeState, u *healthUpdate, zones *zoneTally) {
	v := u.node
	observed, current, err := c.finishHealth(ctx, u)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Error("node health update failed; skipping the node this pass", "node", v.name, "err", err)
		}
		return
	}
	if !v.excluded {
		zones.add(v.zone(), current)
	}
	if current == nil {
		return
	}
	c.taintForReadiness(ctx, v, observed.Status)
	if current.Status != corev1.ConditionTrue && observed.Status == corev1.ConditionTrue {
		c.log.Info("node is not ready", "node", v.name, "status", string(current.Status))
		c.cluster.event(c.nodes.ref(st), "NodeNotReady", "Node %s status is now: %s", v.name, "NodeNotReady")
	}
}

// classify lists the nodes and compares them with those known from the last
// pass: new ones get RegisteredNode, gone ones RemovingNode. A node whose
// store revision is the one its view was made at is not read; any other is,
// and its view made again in place.
// It sets c.slots to the table slots of the nodes listed, in their order,
// for the rest of the pass. A node deleted between the listing and its read
// is left out, as if it had not been listed.
func (c *Controller) classify() {
	c.pass++
	pass := uint32(c.pass)
	revs, count := c.cluster.nodeRevisions()
	c.slots = slices.Grow(c.slots[:0], count)
	for name, rev := range revs {
		id, st := c.nodes.lookup(name)
		if st != nil && st.known && st.view.revision == rev {
			st.seen = pass
			c.slots = append(c.slots, id)
			continue
		}
		n, ok := c.cluster.node(name)
		if !ok {
			continue // deleted since it was listed
		}
		if st != nil && st.known && c.nodes.hasUID(st, n.UID) {
			st.view.set(n)
			st.seen = pass
			c.slots = append(c.slots, id)
			continue
		}
		if st != nil && st.known {
			c.forgetNode(name)
		}
		id = c.nodes.slot(name)
		st = c.nodes.at(id)
		st.view.set(n)
		c.nodes.setUID(st, n.UID)
		st.known, st.seen = true, pass
		c.log.Info("observed a new node", "node", name)
		c.cluster.event(c.nodes.ref(st), "RegisteredNode", "Node %s event: %s", name, fmt.Sprintf("Registered Node %s in Controller", name))
		c.slots = append(c.slots, id)
		c.queue(st.view.zone())
	}
	var gone []string
	c.nodes.all(func(st *nodeState) {
		if st.known && st.seen != pass {
			gone = append(gone, st.view.name)
		}
	})
	for _, name := range gone {
		c.forgetNode(name)
	}
}

// forgetNode drops a node that is gone or was replaced by a new object of
// the same name.
func (c *Controller) forgetNode(name string) {
	c.log.Info("node removed", "node", name)
	var uid types.UID
	if st := c.nodes.get(name); st != nil {
		uid = c.nodes.uidOf(st)
	}
	c.cluster.event(nodeRef(name, uid), "RemovingNode", "Node %s event: %s", name, fmt.Sprintf("Removing Node %s from Controller", name))
	c.nodes.remove(name)
	for _, q := range c.tainters {
		q.forget(name)
	}
}
