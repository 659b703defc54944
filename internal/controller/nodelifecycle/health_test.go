package nodelifecycle

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
	"weak"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	unreachableNoSchedule = corev1.TaintNodeUnreachable + ":NoSchedule"
	unreachableNoExec     = corev1.TaintNodeUnreachable + ":NoExecute"
	notReadyNoSchedule    = corev1.TaintNodeNotReady + ":NoSchedule"
	notReadyNoExec        = corev1.TaintNodeNotReady + ":NoExecute"
)

// oneRenewedNode is a cluster with one Ready node n1 whose lease was renewed
// at t0, and a controller that has made its first pass over it.
func oneRenewedNode(t *testing.T) (context.Context, *memCluster, *Controller) {
	ctx := context.Background()
	m := newMemCluster(t, t0)
	m.addNode("n1", "", corev1.ConditionTrue)
	m.renew("n1", t0)
	c := m.controller(Config{})
	c.monitor(ctx)
	return ctx, m, c
}

// step advances the fake clock by d and runs one monitor pass.
func step(ctx context.Context, m *memCluster, c *Controller, d time.Duration) {
	m.clock.Step(d)
	c.monitor(ctx)
}

func wantCondition(t *testing.T, n *corev1.Node, typ corev1.NodeConditionType, status corev1.ConditionStatus, reason, message string) *corev1.NodeCondition {
	t.Helper()
	cond := condition(&n.Status, typ)
	if cond == nil {
		t.Fatalf("node %s has no %s condition", n.Name, typ)
	}
	if cond.Status != status || cond.Reason != reason || cond.Message != message {
		t.Fatalf("%s = %s/%q/%q, want %s/%q/%q", typ, cond.Status, cond.Reason, cond.Message, status, reason, message)
	}
	return cond
}

func TestGraceExpiryMarksConditionsUnknown(t *testing.T) {
	ctx := context.Background()
	m := newMemCluster(t, t0)
	m.addNode("n1", "", corev1.ConditionTrue)
	n := m.get("n1").DeepCopy()
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse})
	n.ResourceVersion = m.nextRV()
	m.objs["n1"] = n
	m.renew("n1", t0)
	c := m.controller(Config{})

	c.monitor(ctx)
	step(ctx, m, c, 50*time.Second) // exactly the grace period: not yet
	wantCondition(t, m.get("n1"), corev1.NodeReady, corev1.ConditionTrue, "Agent", "posted")
	if m.writes != 0 {
		t.Fatalf("%d writes before the grace period ended", m.writes)
	}

	step(ctx, m, c, time.Second)
	got := m.get("n1")
	ready := wantCondition(t, got, corev1.NodeReady, corev1.ConditionUnknown, reasonUnknown, messageUnknown)
	if !ready.LastHeartbeatTime.Time.Equal(t0) || !ready.LastTransitionTime.Time.Equal(t0.Add(51*time.Second)) {
		t.Errorf("Ready heartbeat %v transition %v, want heartbeat kept at %v and transition now", ready.LastHeartbeatTime, ready.LastTransitionTime, t0)
	}
	for _, typ := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
		wantCondition(t, got, typ, corev1.ConditionUnknown, reasonUnknown, messageUnknown)
	}
	if nu := condition(&got.Status, corev1.NodeNetworkUnavailable); nu.Status != corev1.ConditionFalse {
		t.Errorf("NetworkUnavailable changed to %s; the controller must leave it", nu.Status)
	}
	if ev := m.eventsWith("NodeNotReady"); len(ev) != 1 || ev[0].message != "Node n1 status is now: NodeNotReady" {
		t.Errorf("NodeNotReady events = %+v", ev)
	}
	if !slices.Contains(m.taintKeysOf("n1"), unreachableNoSchedule) {
		t.Errorf("taints %v lack %s", m.taintKeysOf("n1"), unreachableNoSchedule)
	}

	// Later passes change nothing and record no more events.
	writes := m.writes
	step(ctx, m, c, 5*time.Second)
	step(ctx, m, c, 5*time.Second)
	if got := len(m.eventsWith("NodeNotReady")); got != 1 {
		t.Errorf("%d NodeNotReady events, want 1", got)
	}
	if m.writes != writes {
		t.Errorf("%d more writes for a node already Unknown and tainted NoSchedule", m.writes-writes)
	}
}

func TestOnlyAChangedRenewTimeIsAHeartbeat(t *testing.T) {
	ctx := context.Background()
	m := newMemCluster(t, t0)
	m.addNode("stale", "", corev1.ConditionTrue)
	m.addNode("live", "", corev1.ConditionTrue)
	m.renew("stale", t0)
	m.renew("live", t0)
	c := m.controller(Config{})
	c.monitor(ctx)

	// Both leases are rewritten every 10 s (new resourceVersion), but only
	// live's renewTime changes.
	for range 6 {
		m.clock.Step(10 * time.Second)
		m.renew("live", m.clock.Now())
		m.renew("stale", t0)
		c.monitor(ctx)
	}
	wantCondition(t, m.get("stale"), corev1.NodeReady, corev1.ConditionUnknown, reasonUnknown, messageUnknown)
	wantCondition(t, m.get("live"), corev1.NodeReady, corev1.ConditionTrue, "Agent", "posted")
}

func TestReadyHeartbeatAloneKeepsNodeAlive(t *testing.T) {
	ctx := context.Background()
	m := newMemCluster(t, t0)
	m.addNode("n1", "", corev1.ConditionTrue) // no lease at all
	c := m.controller(Config{})
	c.monitor(ctx)
	for range 6 {
		m.clock.Step(20 * time.Second)
		m.postStatus("n1", corev1.ConditionTrue)
		c.monitor(ctx)
	}
	wantCondition(t, m.get("n1"), corev1.NodeReady, corev1.ConditionTrue, "Agent", "posted")
	step(ctx, m, c, 51*time.Second)
	wantCondition(t, m.get("n1"), corev1.NodeReady, corev1.ConditionUnknown, reasonUnknown, messageUnknown)
}

func TestStartupGraceForNodeThatNeverPosted(t *testing.T) {
	ctx := context.Background()
	m := newMemCluster(t, t0)
	m.addNode("n1", "", "") // registered, no status ever
	c := m.controller(Config{})
	c.monitor(ctx)
	step(ctx, m, c, 55*time.Second) // past the 50 s grace, within the 60 s startup grace
	if len(m.get("n1").Status.Conditions) != 0 {
		t.Fatalf("conditions set within the startup grace: %+v", m.get("n1").Status.Conditions)
	}
	step(ctx, m, c, 6*time.Second)
	got := m.get("n1")
	for _, typ := range timedOutConditions {
		cond := wantCondition(t, got, typ, corev1.ConditionUnknown, reasonNeverUpdated, messageNeverUpdated)
		if !cond.LastHeartbeatTime.Time.Equal(t0) || !cond.LastTransitionTime.Time.Equal(t0.Add(61*time.Second)) {
			t.Errorf("%s heartbeat %v transition %v, want creation time and now", typ, cond.LastHeartbeatTime, cond.LastTransitionTime)
		}
	}
	if ev := m.eventsWith("NodeNotReady"); len(ev) != 0 {
		t.Errorf("NodeNotReady for a node that was never Ready: %+v", ev)
	}
}

func TestLeaseKeepsNodeThatNeverPostedAlive(t *testing.T) {
	ctx := context.Background()
	m := newMemCluster(t, t0)
	m.addNode("n1", "", "")
	c := m.controller(Config{})
	for range 10 {
		m.renew("n1", m.clock.Now())
		step(ctx, m, c, 10*time.Second)
	}
	if len(m.get("n1").Status.Conditions) != 0 {
		t.Fatalf("a node renewing its lease was marked: %+v", m.get("n1").Status.Conditions)
	}
}

func TestRegisteredAndRemovingEvents(t *testing.T) {
	ctx := context.Background()
	m := newMemCluster(t, t0)
	m.addNode("n1", "", corev1.ConditionTrue)
	c := m.controller(Config{})
	c.monitor(ctx)
	c.monitor(ctx)
	if ev := m.eventsWith("RegisteredNode"); len(ev) != 1 || ev[0].message != "Node n1 event: Registered Node n1 in Controller" {
		t.Fatalf("RegisteredNode events = %+v", ev)
	}
	delete(m.objs, "n1")
	c.monitor(ctx)
	if ev := m.eventsWith("RemovingNode"); len(ev) != 1 || ev[0].message != "Node n1 event: Removing Node n1 from Controller" {
		t.Fatalf("RemovingNode events = %+v", ev)
	}
	if _, ok := c.healthOf("n1"); ok {
		t.Error("health of a removed node kept")
	}
	// Registered again (new uid): a new node, judged afresh.
	m.addNode("n1", "", corev1.ConditionTrue)
	c.monitor(ctx)
	if ev := m.eventsWith("RegisteredNode"); len(ev) != 2 {
		t.Fatalf("RegisteredNode events after re-registration = %+v", ev)
	}
}

// staleCluster lists the node revisions it was given instead of the
// current ones, as a watch cache that lags a write would.
type staleCluster struct {
	*memCluster
	stale map[string]int64 // nil: list the current ones
}

func (s *staleCluster) nodeRevisions() (iter.Seq2[string, int64], int) {
	if s.stale == nil {
		return s.memCluster.nodeRevisions()
	}
	return maps.All(s.stale), len(s.stale)
}

func TestStatusConflictIsRetriedWithFreshNode(t *testing.T) {
	ctx := context.Background()
	m := newMemCluster(t, t0)
	m.addNode("n1", "", corev1.ConditionTrue)
	sc := &staleCluster{memCluster: m}
	c, err := newController(Config{Clock: m.clock, Logger: slog.New(slog.DiscardHandler)}, sc)
	if err != nil {
		t.Fatal(err)
	}
	c.monitor(ctx)
	m.clock.Step(51 * time.Second)
	// The pass lists n1 as it is now; a write lands before its status
	// update.
	sc.stale = map[string]int64{"n1": mustRevision(t, m.get("n1"))}
	labelled := m.get("n1").DeepCopy()
	labelled.Labels = map[string]string{"touched": "yes"}
	labelled.ResourceVersion = m.nextRV()
	m.objs["n1"] = labelled
	c.monitor(ctx)
	got := m.get("n1")
	wantCondition(t, got, corev1.NodeReady, corev1.ConditionUnknown, reasonUnknown, messageUnknown)
	if got.Labels["touched"] != "yes" {
		t.Error("retry overwrote the concurrent write")
	}
}

// The controller reads nodes straight from the watch cache, whose objects
// every reader shares: marking a silent node Unknown must change a copy that
// goes to the server, never the object the pass was given.
func TestMonitorNeverChangesTheNodesItReads(t *testing.T) {
	ctx, m, c := oneRenewedNode(t)

	read := m.get("n1")
	before := read.DeepCopy()
	step(ctx, m, c, 51*time.Second)
	wantCondition(t, m.get("n1"), corev1.NodeReady, corev1.ConditionUnknown, reasonUnknown, messageUnknown)
	if !equality.Semantic.DeepEqual(read, before) {
		t.Fatalf("the node object the pass read was changed:\nbefore %+v\nafter  %+v", before.Status, read.Status)
	}
}

// gatedCluster holds every status write until `want` of them are in flight
// at once (or a deadline passes), so a pass that writes one at a time cannot
// finish its writes in time.
type gatedCluster struct {
	*memCluster
	want     int
	mu       sync.Mutex
	inFlight int
	most     int
	released bool
	all      chan struct{}
	// gaveUp, closed after one write waited in vain, fails the rest at once.
	giveUp sync.Once
	gaveUp chan struct{}
}

func (g *gatedCluster) updateStatus(ctx context.Context, n *corev1.Node) error {
	g.mu.Lock()
	g.inFlight++
	g.most = max(g.most, g.inFlight)
	if g.inFlight == g.want && g.most == g.want && !g.released {
		g.released = true
		close(g.all)
	}
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}()
	select {
	case <-g.all:
		return g.memCluster.updateStatus(ctx, n)
	case <-g.gaveUp:
	case <-time.After(2 * time.Second):
		g.giveUp.Do(func() { close(g.gaveUp) })
	}
	return fmt.Errorf("only %d status writes in flight together, want %d", g.most, g.want)
}

// A pass that finds many silent nodes writes their statuses in parallel, as
// kube-controller-manager's workers do, instead of one fsync after another.
func TestMonitorWritesStatusesInParallel(t *testing.T) {
	ctx := context.Background()
	m := newMemCluster(t, t0)
	const nodes = 3 * writeWorkers
	for i := range nodes {
		name := fmt.Sprintf("n%02d", i)
		m.addNode(name, "", corev1.ConditionTrue)
		m.renew(name, t0)
	}
	g := &gatedCluster{memCluster: m, want: writeWorkers, all: make(chan struct{}), gaveUp: make(chan struct{})}
	c, err := newController(Config{Clock: m.clock, Logger: slog.New(slog.DiscardHandler)}, g)
	if err != nil {
		t.Fatal(err)
	}
	c.monitor(ctx)
	m.clock.Step(51 * time.Second)
	c.monitor(ctx)
	for i := range nodes {
		wantCondition(t, m.get(fmt.Sprintf("n%02d", i)), corev1.NodeReady, corev1.ConditionUnknown, reasonUnknown, messageUnknown)
	}
	if g.most != writeWorkers {
		t.Errorf("at most %d status writes were in flight, want %d", g.most, writeWorkers)
	}
}

// TestHealthKeepsNoSupersededObjects: once the cluster has moved on to new
// versions of a node and its lease, the controller must not keep the old
// ones alive (at 100,000 nodes each retained version is megabytes).
func TestHealthKeepsNoSupersededObjects(t *testing.T) {
	ctx, m, c := oneRenewedNode(t)

	oldNode, oldLease := weak.Make(m.objs["n1"]), weak.Make(m.leases["n1"])
	m.clock.Step(10 * time.Second)
	m.postStatus("n1", corev1.ConditionTrue)
	m.renew("n1", m.clock.Now())
	// Objects may take more than one cycle to be freed (weak pointers are
	// cleared when the object is found unreachable).
	for range 3 {
		runtime.GC()
	}
	if oldNode.Value() != nil {
		t.Error("the controller keeps the node version it saw last pass")
	}
	if oldLease.Value() != nil {
		t.Error("the controller keeps the lease version it saw last pass")
	}

	// The times it kept instead still tell a heartbeat from a rewrite.
	step(ctx, m, c, 45*time.Second)
	wantCondition(t, m.get("n1"), corev1.NodeReady, corev1.ConditionTrue, "Agent", "posted")
}

// A pass assesses nodes in chunks of monitorChunk: silent nodes at either
// end of a chunk are marked and tainted, and every other node is left
// alone, as with a pass in one piece.
func TestMonitorAcrossChunks(t *testing.T) {
	ctx := context.Background()
	m := newMemCluster(t, t0)
	total := 2*monitorChunk + 3
	silent := map[string]bool{}
	for i := range total {
		name := fmt.Sprintf("n%05d", i)
		m.addNode(name, "", corev1.ConditionTrue)
		m.renew(name, t0)
		if i == 0 || i == monitorChunk-1 || i == monitorChunk || i == total-1 {
			silent[name] = true
		}
	}
	c := m.controller(Config{})
	c.monitor(ctx)
	for range 11 {
		m.clock.Step(5 * time.Second)
		for name := range m.objs {
			if !silent[name] {
				m.renew(name, m.clock.Now())
			}
		}
		c.monitor(ctx)
	}
	for name := range m.objs {
		want := corev1.ConditionTrue
		if silent[name] {
			want = corev1.ConditionUnknown
		}
		if got := condition(&m.get(name).Status, corev1.NodeReady).Status; got != want {
			t.Errorf("%s: Ready %s, want %s", name, got, want)
		}
		if tainted := slices.Contains(m.taintKeysOf(name), unreachableNoSchedule); tainted != silent[name] {
			t.Errorf("%s: taints %v", name, m.taintKeysOf(name))
		}
	}
	if got := len(m.eventsWith("NodeNotReady")); got != len(silent) {
		t.Errorf("%d NodeNotReady events, want %d", got, len(silent))
	}
}

// A pass reads only the nodes whose revision changed since the last, and
// judges each by its current state: an unchanged node's view is kept, a
// changed node's made again, a deleted node's dropped with its record.
func TestPassReadsOnlyChangedNodes(t *testing.T) {
	ctx := context.Background()
	m := newMemCluster(t, t0)
	for _, n := range []string{"a", "b", "c"} {
		m.addNode(n, "", corev1.ConditionTrue)
	}
	c := m.controller(Config{})
	c.monitor(ctx)
	if m.nodeReads != 3 {
		t.Fatalf("first pass read %d nodes, want 3", m.nodeReads)
	}
	m.nodeReads = 0
	c.monitor(ctx)
	if m.nodeReads != 0 {
		t.Fatalf("a pass over unchanged nodes read %d of them", m.nodeReads)
	}
	delete(m.objs, "b")
	m.postStatus("c", corev1.ConditionFalse)
	posted := mustRevision(t, m.get("c"))
	c.monitor(ctx)
	if m.nodeReads != 1 {
		t.Errorf("a pass after one node changed read %d nodes, want 1", m.nodeReads)
	}
	if c.nodes.get("b") != nil || len(c.slots) != 2 {
		t.Errorf("deleted node still held (%d nodes in the pass)", len(c.slots))
	}
	cv := &c.nodes.get("c").view
	if got := cv.readyCondition(); cv.revision != posted || got.Status != corev1.ConditionFalse {
		t.Errorf("c's view at revision %d, Ready %s; want %d, False", cv.revision, got.Status, posted)
	}
}

func mustRevision(t *testing.T, n *corev1.Node) int64 {
	t.Helper()
	rev, err := strconv.ParseInt(n.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// A pass reads only the leases that changed since the last one: at 100,000
// nodes the unchanged ones may be kept compressed, and reading them all on
// every pass is what the lease revision in leaseMark saves.
func TestPassReadsOnlyChangedLeases(t *testing.T) {
	ctx := context.Background()
	m := newMemCluster(t, t0)
	for _, name := range []string{"a", "b", "c"} {
		m.addNode(name, "", corev1.ConditionTrue)
		m.renew(name, t0)
	}
	c := m.controller(Config{})
	c.monitor(ctx)
	if m.leaseReads != 3 {
		t.Fatalf("first pass read %d leases, want 3", m.leaseReads)
	}
	for range 6 {
		m.leaseReads = 0
		m.clock.Step(10 * time.Second)
		m.renew("a", m.clock.Now())
		c.monitor(ctx)
		if m.leaseReads != 1 {
			t.Fatalf("a pass after one renewal read %d leases, want 1", m.leaseReads)
		}
	}
	// Unread, b's and c's leases still count as last seen: both went silent,
	// and a was kept alive by the one lease that was read.
	wantCondition(t, m.get("a"), corev1.NodeReady, corev1.ConditionTrue, "Agent", "posted")
	wantCondition(t, m.get("b"), corev1.NodeReady, corev1.ConditionUnknown, reasonUnknown, messageUnknown)
	wantCondition(t, m.get("c"), corev1.NodeReady, corev1.ConditionUnknown, reasonUnknown, messageUnknown)
}
