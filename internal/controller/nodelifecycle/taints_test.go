package nodelifecycle

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestNoScheduleTaintsFollowConditions(t *testing.T) {
	foreign := corev1.Taint{Key: "example.com/dedicated", Effect: corev1.TaintEffectNoSchedule}
	cases := []struct {
		name          string
		conds         map[corev1.NodeConditionType]corev1.ConditionStatus
		unschedulable bool
		have          []corev1.Taint
		add, remove   []string
	}{
		{name: "ready", conds: map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeReady: corev1.ConditionTrue}},
		{name: "not ready", conds: map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeReady: corev1.ConditionFalse}, add: []string{corev1.TaintNodeNotReady}},
		{name: "unknown", conds: map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeReady: corev1.ConditionUnknown}, add: []string{corev1.TaintNodeUnreachable}},
		{name: "pressures", conds: map[corev1.NodeConditionType]corev1.ConditionStatus{
			corev1.NodeMemoryPressure: corev1.ConditionTrue, corev1.NodeDiskPressure: corev1.ConditionTrue,
			corev1.NodePIDPressure: corev1.ConditionTrue, corev1.NodeNetworkUnavailable: corev1.ConditionTrue,
		}, add: []string{corev1.TaintNodeMemoryPressure, corev1.TaintNodeDiskPressure, corev1.TaintNodePIDPressure, corev1.TaintNodeNetworkUnavailable}},
		{name: "unschedulable", unschedulable: true, add: []string{corev1.TaintNodeUnschedulable}},
		{
			name:  "recovered keeps foreign taints and NoExecute ones",
			conds: map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeReady: corev1.ConditionTrue},
			have: []corev1.Taint{foreign, {Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
				unreachableNoExecute, {Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}},
			remove: []string{corev1.TaintNodeUnreachable, corev1.TaintNodeUnschedulable},
		},
		{
			name:  "already tainted",
			conds: map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeReady: corev1.ConditionUnknown},
			have:  []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule}},
		},
	}
	order := []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeNetworkUnavailable}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := &corev1.Node{Spec: corev1.NodeSpec{Unschedulable: tc.unschedulable, Taints: tc.have}}
			for _, typ := range order {
				if s, ok := tc.conds[typ]; ok {
					n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: typ, Status: s})
				}
			}
			add, remove := noScheduleDiff(viewOf(n))
			for _, ts := range [][]corev1.Taint{add, remove} {
				for _, tt := range ts {
					if tt.Effect != corev1.TaintEffectNoSchedule {
						t.Errorf("taint %s has effect %s", tt.Key, tt.Effect)
					}
				}
			}
			if got := taintKeys(add); !slices.Equal(got, tc.add) && len(got)+len(tc.add) > 0 {
				t.Errorf("add %v, want %v", got, tc.add)
			}
			if got := taintKeys(remove); !slices.Equal(got, tc.remove) && len(got)+len(tc.remove) > 0 {
				t.Errorf("remove %v, want %v", got, tc.remove)
			}
		})
	}
}

func TestNoExecuteTaintAddedThenRemovedWhenReady(t *testing.T) {
	ctx := context.Background()
	m := newMemCluster(t, t0)
	m.addNode("n1", "", corev1.ConditionTrue)
	m.addNode("n2", "", corev1.ConditionTrue) // stays healthy: no disruption mode
	m.renew("n1", t0)
	c := m.controller(Config{})
	c.monitor(ctx)
	for range 11 {
		m.clock.Step(5 * time.Second)
		m.postStatus("n2", corev1.ConditionTrue)
		c.monitor(ctx)
	}
	// The pass that found n1 silent observed it Ready: the NoExecute taint
	// is queued by the next pass and added by the tainting pass.
	if slices.Contains(m.taintKeysOf("n1"), unreachableNoExec) {
		t.Fatal("NoExecute taint added in the same pass that marked the node Unknown")
	}
	m.clock.Step(5 * time.Second)
	m.postStatus("n2", corev1.ConditionTrue)
	c.monitor(ctx)
	c.taintPass(ctx)
	taints := m.taintKeysOf("n1")
	if !slices.Contains(taints, unreachableNoExec) || !slices.Contains(taints, unreachableNoSchedule) {
		t.Fatalf("taints %v, want both unreachable taints", taints)
	}
	for _, tt := range m.get("n1").Spec.Taints {
		switch {
		case tt.TimeAdded == nil:
			t.Errorf("taint %s:%s has no timeAdded", tt.Key, tt.Effect)
		case tt.Effect == corev1.TaintEffectNoExecute && !tt.TimeAdded.Time.Equal(m.clock.Now()):
			t.Errorf("NoExecute taint timeAdded %v, want now (%v)", tt.TimeAdded, m.clock.Now())
		case tt.Effect == corev1.TaintEffectNoSchedule && !tt.TimeAdded.Time.Equal(t0.Add(55*time.Second)):
			t.Errorf("NoSchedule taint timeAdded %v, want when the node was marked Unknown", tt.TimeAdded)
		}
	}
	// Further passes do not re-add (or re-stamp) the taint.
	writes := m.writes
	m.clock.Step(30 * time.Second)
	m.postStatus("n2", corev1.ConditionTrue)
	c.monitor(ctx)
	c.taintPass(ctx)
	if m.writes != writes {
		t.Errorf("%d writes for a node already tainted", m.writes-writes)
	}

	// The node comes back: lease renewed, status posted.
	m.clock.Step(time.Second)
	m.renew("n1", m.clock.Now())
	m.postStatus("n1", corev1.ConditionTrue)
	c.monitor(ctx)
	if taints := m.taintKeysOf("n1"); len(taints) != 0 {
		t.Fatalf("taints %v left on a Ready node", taints)
	}
}

func TestNotReadyAndUnreachableSwapAtOnce(t *testing.T) {
	ctx := context.Background()
	m := newMemCluster(t, t0)
	m.addNode("n1", "", corev1.ConditionTrue)
	m.addNode("n2", "", corev1.ConditionTrue)
	c := m.controller(Config{})
	c.monitor(ctx)
	// n1 reports NotReady itself.
	m.clock.Step(time.Second)
	m.postStatus("n1", corev1.ConditionFalse)
	m.postStatus("n2", corev1.ConditionTrue)
	c.monitor(ctx)
	c.taintPass(ctx)
	if taints := m.taintKeysOf("n1"); !slices.Equal(taints, []string{notReadyNoSchedule, notReadyNoExec}) && !slices.Equal(taints, []string{notReadyNoExec, notReadyNoSchedule}) {
		t.Fatalf("taints %v, want the not-ready ones", taints)
	}
	// Then goes silent: the pass that sees Unknown swaps NoExecute taints
	// without waiting for the queue.
	for range 11 {
		m.clock.Step(5 * time.Second)
		m.postStatus("n2", corev1.ConditionTrue)
		c.monitor(ctx)
	}
	wantCondition(t, m.get("n1"), corev1.NodeReady, corev1.ConditionUnknown, reasonUnknown, messageUnknown)
	m.clock.Step(5 * time.Second)
	m.postStatus("n2", corev1.ConditionTrue)
	c.monitor(ctx)
	taints := m.taintKeysOf("n1")
	if !slices.Contains(taints, unreachableNoExec) || slices.Contains(taints, notReadyNoExec) ||
		!slices.Contains(taints, unreachableNoSchedule) || slices.Contains(taints, notReadyNoSchedule) {
		t.Fatalf("taints %v, want only the unreachable ones", taints)
	}
}

func TestNoExecuteTaintingIsRateLimitedPerZone(t *testing.T) {
	ctx := context.Background()
	m := newMemCluster(t, t0)
	// Zone a: 2 of 8 silent (Normal, 0.1/s, burst 1). Zone b: one healthy node.
	names := []string{"a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7"}
	for _, n := range names {
		m.addNode(n, "a", corev1.ConditionTrue)
	}
	m.addNode("b0", "b", corev1.ConditionTrue)
	c := m.controller(Config{})
	c.monitor(ctx)
	alive := func() {
		for _, n := range append(names[2:], "b0") {
			m.postStatus(n, corev1.ConditionTrue)
		}
	}
	for range 12 {
		m.clock.Step(5 * time.Second)
		alive()
		c.monitor(ctx)
	}
	c.taintPass(ctx)
	tainted := func() int {
		k := 0
		for _, n := range names[:2] {
			if slices.Contains(m.taintKeysOf(n), unreachableNoExec) {
				k++
			}
		}
		return k
	}
	if got := tainted(); got != 1 {
		t.Fatalf("%d nodes tainted NoExecute at once, want 1 (burst 1)", got)
	}
	m.clock.Step(9 * time.Second)
	c.taintPass(ctx)
	if got := tainted(); got != 1 {
		t.Fatalf("%d nodes tainted 9 s later, want still 1 at 0.1/s", got)
	}
	m.clock.Step(time.Second)
	c.taintPass(ctx)
	if got := tainted(); got != 2 {
		t.Fatalf("%d nodes tainted 10 s later, want 2", got)
	}
}
