package dashboard

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func lease(ns, name, holder string, renew time.Time, dur int32, transitions int32) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To(dur),
			LeaseTransitions: ptr.To(transitions), RenewTime: &metav1.MicroTime{Time: renew}, AcquireTime: &metav1.MicroTime{Time: renew}}}
	if ns == NodeLeaseNamespace {
		l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name}}
	}
	return l
}

func node(name string, ready corev1.ConditionStatus) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"zone": "a"}},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute}}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}}
}

func TestClassify(t *testing.T) {
	d := 40 * time.Second
	for _, tc := range []struct {
		age  time.Duration
		want State
		heat byte
	}{
		{0, Healthy, 1}, {14 * time.Second, Healthy, 36}, {15 * time.Second, Late, 38},
		{39 * time.Second, Late, 98}, {40 * time.Second, Expired, 101}, {time.Hour, Expired, 250},
	} {
		st, ratio := Classify(t0, d, t0.Add(tc.age))
		if st != tc.want || HeatByte(st, ratio) != tc.heat {
			t.Errorf("age %v: %v heat %d, want %v heat %d", tc.age, st, HeatByte(st, ratio), tc.want, tc.heat)
		}
	}
	if st, _ := Classify(time.Time{}, d, t0); st != Unknown || HeatByte(st, 0) != 0 {
		t.Errorf("never renewed: %v, want unknown with heat 0", st)
	}
}

func TestSnapshotCountsHeatAndRows(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	f := NewFleet(clk)
	f.SetLease(lease(NodeLeaseNamespace, "n1", "n1", t0.Add(-2*time.Second), 40, 0))  // healthy
	f.SetLease(lease(NodeLeaseNamespace, "n2", "n2", t0.Add(-20*time.Second), 40, 0)) // late
	f.SetLease(lease(NodeLeaseNamespace, "n3", "n3", t0.Add(-50*time.Second), 40, 0)) // expired, Node gone
	f.SetNode(node("n1", corev1.ConditionTrue))
	f.SetNode(node("n2", corev1.ConditionUnknown))
	f.NodesKnown(true)
	s, heat := f.Snapshot(t0)
	if want := (Counts{Healthy: 1, Late: 1, Expired: 1, NotReady: 1}); s.Counts != want {
		t.Errorf("counts %+v, want %+v", s.Counts, want)
	}
	if got := heatBytes(heat, t0); len(got) != 3 || got[0] != 6 || got[1] != 51 || got[2] != 126 {
		t.Errorf("heat %v, want [6 51 126] (n1, n2, n3 in name order)", got)
	}
	if s.Histogram[0] != 1 || s.Histogram[5] != 1 || s.Histogram[12] != 1 {
		t.Errorf("histogram %v", s.Histogram)
	}

	rows := f.Rows(View{State: "expired", Limit: 10}, t0)
	if rows.Total != 1 || rows.Rows[0].Name != "n3" || !rows.Rows[0].Orphaned || rows.Rows[0].Ready != "missing" {
		t.Errorf("expired rows %+v, want n3 orphaned without a Node", rows)
	}
	rows = f.Rows(View{State: "notready", Limit: 10}, t0)
	if rows.Total != 1 || rows.Rows[0].Name != "n2" || rows.Rows[0].Taints[0] != "node.kubernetes.io/unreachable:NoExecute" {
		t.Errorf("notready rows %+v, want n2 with its taint", rows)
	}
	rows = f.Rows(View{Label: "zone=a", Limit: 1, Offset: 1}, t0)
	if rows.Total != 2 || len(rows.Rows) != 1 || rows.Rows[0].Name != "n2" {
		t.Errorf("label rows %+v, want the second of n1, n2", rows)
	}
	if rows = f.Rows(View{Label: "zone in (", Limit: 1}, t0); rows.Error == "" {
		t.Errorf("a bad selector gave no error: %+v", rows)
	}
	if rows = f.Rows(View{Query: "N1", Limit: 10}, t0); rows.Total != 1 {
		t.Errorf("query N1 matched %d, want 1 (case-insensitive)", rows.Total)
	}
	if got := f.CellName(1); got != "n2" {
		t.Errorf("CellName(1) = %q, want n2", got)
	}
}

func TestLeaderTimeline(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	f := NewFleet(clk)
	ns := "default"
	f.SetLease(lease(ns, "db", "a", t0, 15, 0))
	// b takes over a after it stopped renewing.
	f.SetLease(lease(ns, "db", "b", t0.Add(20*time.Second), 15, 1))
	// b releases (client-go empties holderIdentity), c acquires.
	f.SetLease(lease(ns, "db", "", t0.Add(21*time.Second), 1, 1))
	f.SetLease(lease(ns, "db", "c", t0.Add(22*time.Second), 15, 2))
	// The coordinated controller prefers d, then hands the lease to it.
	pref := lease(ns, "db", "c", t0.Add(23*time.Second), 15, 2)
	pref.Spec.PreferredHolder = ptr.To("d")
	f.SetLease(pref)
	f.SetLease(lease(ns, "db", "d", t0.Add(24*time.Second), 15, 3))
	// An event confirms d; another tells of a leader before we watched.
	f.SetEvent(&corev1.Event{Reason: "LeaderElection", Message: "d became leader", InvolvedObject: corev1.ObjectReference{Kind: "Lease", Namespace: ns, Name: "db"},
		LastTimestamp: metav1.Time{Time: t0.Add(24 * time.Second)}})
	old := &corev1.Event{Reason: "LeaderElection", Message: "z became leader", InvolvedObject: corev1.ObjectReference{Kind: "Lease", Namespace: ns, Name: "db"},
		LastTimestamp: metav1.Time{Time: t0.Add(-time.Hour)}}
	f.SetEvent(old)
	f.SetEvent(old)

	s, _ := f.Snapshot(t0.Add(25 * time.Second))
	if len(s.Leaders) != 1 {
		t.Fatalf("leaders %+v, want one", s.Leaders)
	}
	want := []Transition{
		{At: t0.Add(-time.Hour), To: "z", Token: -1, Kind: KindElected, Event: true},
		{At: t0.Add(20 * time.Second), From: "a", To: "b", Token: 1, Kind: KindTakenOver},
		{At: t0.Add(22 * time.Second), From: "b", To: "c", Token: 2, Kind: KindReleased},
		{At: t0.Add(24 * time.Second), From: "c", To: "d", Token: 3, Kind: KindHandOver, Event: true},
	}
	got := s.Leaders[0].Timeline
	if len(got) != len(want) {
		t.Fatalf("timeline %+v, want %+v", got, want)
	}
	for i := range want {
		if !got[i].At.Equal(want[i].At) || got[i].From != want[i].From || got[i].To != want[i].To || got[i].Token != want[i].Token || got[i].Kind != want[i].Kind || got[i].Event != want[i].Event {
			t.Errorf("transition %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if l := s.Leaders[0]; l.Holder != "d" || l.Transitions != 3 {
		t.Errorf("leader %+v, want holder d with token 3", l)
	}
}

func TestAttention(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	f := NewFleet(clk)
	f.SetLease(lease(NodeLeaseNamespace, "slow", "slow", t0, 40, 0))
	f.SetLease(lease(NodeLeaseNamespace, "slow", "slow", t0.Add(25*time.Second), 40, 0)) // 25 s > 15 s
	f.SetLease(lease(NodeLeaseNamespace, "skewed", "skewed", t0.Add(-time.Minute), 40, 0))
	f.SetLease(lease(NodeLeaseNamespace, "skewed", "skewed", t0.Add(-30*time.Second), 40, 0)) // renewTime 30 s behind
	id := lease("kube-system", "apiserver-x", "apiserver-x_1", t0.Add(-2*time.Hour), 3600, 0)
	id.Labels = map[string]string{identityLabel: "kube-apiserver"}
	f.SetLease(id)
	f.SetNode(node("flappy", corev1.ConditionTrue))
	for i, s := range []corev1.ConditionStatus{corev1.ConditionUnknown, corev1.ConditionTrue, corev1.ConditionUnknown} {
		clk.Step(time.Duration(i+1) * time.Second)
		f.SetNode(node("flappy", s))
	}
	s, _ := f.Snapshot(clk.Now())
	a := s.Attention
	if a.LateTotal != 2 || a.Late[0].Name != "skewed" || a.Late[1].Name != "slow" {
		// skewed's 30 s gap is late too.
		t.Errorf("late %+v", a.Late)
	}
	if a.SkewedTotal != 2 || a.Skewed[0].Name != "skewed" {
		t.Errorf("skewed %+v, want skewed (and slow, renewed 25 s ahead)", a.Skewed)
	}
	if a.IdentityTotal != 1 || a.Identity[0].Name != "apiserver-x" {
		t.Errorf("identity %+v", a.Identity)
	}
	if a.FlappingTotal != 1 || a.Flapping[0].Name != "flappy" {
		t.Errorf("flapping %+v", a.Flapping)
	}
}

// TestUpdatesReachSortedViews guards against the sorted views holding a
// record that an update replaced: renewals must show without a lease
// coming or going.
func TestUpdatesReachSortedViews(t *testing.T) {
	f := NewFleet(clocktesting.NewFakeClock(t0))
	f.SetLease(lease(NodeLeaseNamespace, "n1", "n1", t0.Add(-50*time.Second), 40, 0))
	if s, _ := f.Snapshot(t0); s.Counts.Expired != 1 {
		t.Fatalf("counts %+v, want one expired", s.Counts)
	}
	f.SetLease(lease(NodeLeaseNamespace, "n1", "n1", t0, 40, 0))
	if s, heat := f.Snapshot(t0); s.Counts.Healthy != 1 || heatBytes(heat, t0)[0] != 1 {
		t.Errorf("after a renewal: counts %+v heat %v, want one healthy", s.Counts, heatBytes(heat, t0))
	}
	if r := f.Rows(View{Limit: 1}, t0); r.Rows[0].Renew != t0.UnixMilli() {
		t.Errorf("row renew %d, want %d", r.Rows[0].Renew, t0.UnixMilli())
	}
}

// TestIncrementalMatchesRebuilt applies one random history of lease and
// Node changes to two Fleets, one snapshotted after every step (so its
// dense views and counts are updated in place) and one only at the end
// (built once): their summaries, heat maps and rows must agree.
func TestIncrementalMatchesRebuilt(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	live, rebuilt := NewFleet(clk), NewFleet(clk)
	rnd := rand.New(rand.NewPCG(1, 2))
	statuses := []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown}
	for step := range 3000 {
		clk.Step(time.Duration(rnd.IntN(2000)) * time.Millisecond)
		now := clk.Now()
		name := fmt.Sprintf("n%02d", rnd.IntN(40))
		ns := NodeLeaseNamespace
		if rnd.IntN(5) == 0 {
			ns = "kube-system"
		}
		age, dur := time.Duration(rnd.IntN(60))*time.Second, int32(rnd.IntN(3)*20)
		status := statuses[rnd.IntN(3)]
		for _, f := range []*Fleet{live, rebuilt} {
			switch op := step % 7; {
			case op < 3:
				l := lease(ns, name, name, now.Add(-age), dur, 0)
				if op == 0 {
					l.Labels = map[string]string{identityLabel: name}
				}
				f.SetLease(l)
			case op == 3:
				f.DeleteLease(ns, name)
			case op < 6:
				f.SetNode(node(name, status))
			default:
				f.DeleteNode(name)
			}
		}
		live.Snapshot(now)
	}
	// Last, changes to what exists only, which leave the sorted views in
	// place: renewals, Ready changes and deletions of Nodes.
	for i := range 200 {
		clk.Step(100 * time.Millisecond)
		now := clk.Now()
		k := leaseKey{NodeLeaseNamespace, fmt.Sprintf("n%02d", i%40)}
		if i%3 == 0 {
			k.ns = "kube-system"
		}
		age, status := time.Duration(rnd.IntN(60))*time.Second, statuses[rnd.IntN(3)]
		for _, f := range []*Fleet{live, rebuilt} {
			if f.leases[k] != nil {
				f.SetLease(lease(k.ns, k.name, k.name, now.Add(-age), 40, 0))
			}
			if f.nodes[k.name] != nil {
				if i%5 == 0 {
					f.DeleteNode(k.name)
				} else {
					f.SetNode(node(k.name, status))
				}
			}
		}
		live.Snapshot(now)
	}
	now := clk.Now()
	s1, h1 := live.Snapshot(now)
	s2, h2 := rebuilt.Snapshot(now)
	// The Node counts are kept by SetNode in both Fleets: count them anew.
	notReady, flapping := 0, 0
	for _, n := range live.nodes {
		if n.ready != corev1.ConditionTrue {
			notReady++
		}
		if len(n.flips) >= flapThreshold {
			flapping++
		}
	}
	if s1.Counts.NotReady != notReady || s1.Attention.FlappingTotal != flapping {
		t.Errorf("%d Nodes not ready and %d flapping, want %d and %d", s1.Counts.NotReady, s1.Attention.FlappingTotal, notReady, flapping)
	}
	if s1.Attention.FlappingTotal > maxAttention {
		// Which maxAttention of them are listed is map order.
		s1.Attention.Flapping, s2.Attention.Flapping = nil, nil
	}
	if !reflect.DeepEqual(s1, s2) || !slices.Equal(h1.codes, h2.codes) || !slices.Equal(h1.durs, h2.durs) {
		t.Errorf("incremental %+v\nrebuilt     %+v", s1, s2)
	}
	for _, v := range []View{{Limit: 7, Offset: 3}, {State: "late", Limit: 50}, {State: "notready", Limit: 50}, {Namespace: "kube-system", Limit: 50}, {Query: "n1", Limit: 50}} {
		if r1, r2 := live.Rows(v, now), rebuilt.Rows(v, now); !reflect.DeepEqual(r1, r2) {
			t.Errorf("view %+v: incremental %+v, rebuilt %+v", v, r1, r2)
		}
	}
	if s1.Counts.NotReady == 0 || s1.Counts.Expired == 0 || s1.Counts.Healthy+s1.Counts.Late == 0 {
		t.Errorf("the history should end with every kind of lease and Node: %+v", s1.Counts)
	}
}
