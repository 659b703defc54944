package nodelifecycle

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// memCluster is the controller's state seam held in memory for tests on a
// fake clock: its writes change the objects the next pass reads, with
// resourceVersion checks like the server's. The integration tests run the
// same controller against a real server.
type memCluster struct {
	// mu serialises the writes, which a pass makes from several goroutines
	// (inParallel); reads come after the pass has joined them.
	mu     sync.Mutex
	t      testing.TB
	clock  *clocktesting.FakeClock
	rv     int
	objs   map[string]*corev1.Node
	leases map[string]*coordinationv1.Lease
	events []recorded
	writes int
	// leaseReads and nodeReads count the leases nodeLease and the nodes
	// node handed out.
	leaseReads, nodeReads int
}

type recorded struct {
	node    string
	uid     types.UID
	reason  string
	message string
}

var nodesGR = schema.GroupResource{Resource: "nodes"}

func newMemCluster(t testing.TB, start time.Time) *memCluster {
	return &memCluster{
		t:      t,
		clock:  clocktesting.NewFakeClock(start),
		objs:   map[string]*corev1.Node{},
		leases: map[string]*coordinationv1.Lease{},
	}
}

func (m *memCluster) nextRV() string {
	m.rv++
	return strconv.Itoa(m.rv)
}

func (m *memCluster) controller(cfg Config) *Controller {
	m.t.Helper()
	cfg.Clock = m.clock
	cfg.Logger = slog.New(slog.DiscardHandler)
	c, err := newController(cfg, m)
	if err != nil {
		m.t.Fatal(err)
	}
	return c
}

// addNode registers a node created now; ready, if not empty, posts a Ready
// condition with that status (and False pressure conditions).
func (m *memCluster) addNode(name, zone string, ready corev1.ConditionStatus) {
	now := metav1.NewTime(m.clock.Now())
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: name, UID: types.UID("uid-" + name + "-" + m.nextRV()), CreationTimestamp: now,
	}}
	if zone != "" {
		n.Labels = map[string]string{corev1.LabelTopologyZone: zone}
	}
	n.ResourceVersion = m.nextRV()
	m.objs[name] = n
	if ready != "" {
		m.postStatus(name, ready)
	}
}

// postStatus is the agent posting status now: Ready with the given status
// and a fresh heartbeat, pressure conditions False.
func (m *memCluster) postStatus(name string, ready corev1.ConditionStatus) {
	now := metav1.NewTime(m.clock.Now())
	n := m.objs[name].DeepCopy()
	set := func(t corev1.NodeConditionType, s corev1.ConditionStatus) {
		if c := condition(&n.Status, t); c != nil {
			if c.Status != s {
				c.LastTransitionTime = now
			}
			c.Status, c.LastHeartbeatTime, c.Reason, c.Message = s, now, "Agent", "posted"
			return
		}
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{
			Type: t, Status: s, LastHeartbeatTime: now, LastTransitionTime: now, Reason: "Agent", Message: "posted",
		})
	}
	set(corev1.NodeMemoryPressure, corev1.ConditionFalse)
	set(corev1.NodeDiskPressure, corev1.ConditionFalse)
	set(corev1.NodePIDPressure, corev1.ConditionFalse)
	set(corev1.NodeReady, ready)
	n.ResourceVersion = m.nextRV()
	m.objs[name] = n
}

// renew writes the node's lease with renewTime at (a rewrite with an old
// renewTime still gets a new resourceVersion).
func (m *memCluster) renew(name string, at time.Time) {
	rt := metav1.NewMicroTime(at)
	holder := name
	m.leases[name] = &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease, ResourceVersion: m.nextRV()},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &rt},
	}
}

func (m *memCluster) get(name string) *corev1.Node {
	m.t.Helper()
	n, ok := m.objs[name]
	if !ok {
		m.t.Fatalf("node %s missing", name)
	}
	return n
}

func (m *memCluster) nodeRevisions() (iter.Seq2[string, int64], int) {
	return func(yield func(string, int64) bool) {
		for name, n := range m.objs {
			rev, err := strconv.ParseInt(n.ResourceVersion, 10, 64)
			if err != nil {
				m.t.Fatalf("node %s: resourceVersion %q", name, n.ResourceVersion)
			}
			if !yield(name, rev) {
				return
			}
		}
	}, len(m.objs)
}

func (m *memCluster) node(name string) (*corev1.Node, bool) {
	n, ok := m.objs[name]
	if ok {
		m.nodeReads++
	}
	return n, ok
}

// nodeLease hands out a lease whose resourceVersion is not seen, as the
// watch cache does, and counts the leases it handed out.
func (m *memCluster) nodeLease(name string, seen int64) (*coordinationv1.Lease, int64) {
	l := m.leases[name]
	if l == nil {
		return nil, 0
	}
	rev, err := strconv.ParseInt(l.ResourceVersion, 10, 64)
	if err != nil {
		m.t.Fatalf("lease %s has resourceVersion %q", name, l.ResourceVersion)
	}
	if rev == seen {
		return nil, rev
	}
	m.leaseReads++
	return l, rev
}

func (m *memCluster) freshNode(_ context.Context, name string) (*corev1.Node, error) {
	n, ok := m.objs[name]
	if !ok {
		return nil, apierrors.NewNotFound(nodesGR, name)
	}
	return n.DeepCopy(), nil
}

func (m *memCluster) updateStatus(_ context.Context, n *corev1.Node) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.objs[n.Name]
	if !ok {
		return apierrors.NewNotFound(nodesGR, n.Name)
	}
	if cur.ResourceVersion != n.ResourceVersion {
		return apierrors.NewConflict(nodesGR, n.Name, fmt.Errorf("resourceVersion %s is not %s", n.ResourceVersion, cur.ResourceVersion))
	}
	next := cur.DeepCopy()
	next.Status = *n.Status.DeepCopy()
	next.ResourceVersion = m.nextRV()
	m.objs[n.Name] = next
	m.writes++
	return nil
}

func (m *memCluster) swapTaints(_ context.Context, name string, add, remove []corev1.Taint) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.objs[name]
	if !ok {
		return apierrors.NewNotFound(nodesGR, name)
	}
	taints, changed := swappedTaints(cur.Spec.Taints, add, remove)
	if !changed {
		return nil
	}
	next := cur.DeepCopy()
	next.Spec.Taints = taints
	next.ResourceVersion = m.nextRV()
	m.objs[name] = next
	m.writes++
	return nil
}

func (m *memCluster) event(n *corev1.Node, reason, messageFmt string, args ...any) {
	m.events = append(m.events, recorded{node: n.Name, uid: n.UID, reason: reason, message: fmt.Sprintf(messageFmt, args...)})
}

// eventsWith returns the events with reason recorded so far.
func (m *memCluster) eventsWith(reason string) []recorded {
	var out []recorded
	for _, e := range m.events {
		if e.reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// taintKeysOf lists a node's taints as key:effect.
func (m *memCluster) taintKeysOf(name string) []string {
	var out []string
	for _, t := range m.get(name).Spec.Taints {
		out = append(out, t.Key+":"+string(t.Effect))
	}
	return out
}
