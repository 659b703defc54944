package nodelifecycle

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestZoneState(t *testing.T) {
	c := newMemCluster(t, t0).controller(Config{})
	tr := &corev1.NodeCondition{Status: corev1.ConditionTrue}
	un := &corev1.NodeCondition{Status: corev1.ConditionUnknown}
	cases := []struct {
		conds []*corev1.NodeCondition
		want  zoneState
	}{
		{[]*corev1.NodeCondition{tr, tr}, zoneNormal},
		{[]*corev1.NodeCondition{un, nil}, zoneFullDisruption},
		{[]*corev1.NodeCondition{un, un, tr}, zoneNormal},                    // only 2 NotReady
		{[]*corev1.NodeCondition{un, un, un, tr, tr}, zonePartialDisruption}, // 3/5 = 0.6
		{[]*corev1.NodeCondition{un, un, un, tr, tr, tr}, zoneNormal},        // 3/6 = 0.5
	}
	for i, tc := range cases {
		var z zoneCounts
		for _, cond := range tc.conds {
			z = z.add(cond)
		}
		if got := c.computeZoneState(z); got != tc.want {
			t.Errorf("case %d: %s, want %s", i, got, tc.want)
		}
	}
	if got := c.zoneRate(zonePartialDisruption, 50); got != 0 {
		t.Errorf("partial disruption rate of a small zone %v, want 0", got)
	}
	if got := c.zoneRate(zonePartialDisruption, 51); got != DefaultSecondaryEvictionRate {
		t.Errorf("partial disruption rate of a large zone %v", got)
	}
}

// TestEveryNodeSilentIsMasterDisruption: when all zones lose every node at
// once, no NoExecute taint is added, those already added are removed, and
// when a node is back every probe timestamp restarts at now.
func TestEveryNodeSilentIsMasterDisruption(t *testing.T) {
	ctx := context.Background()
	m := newMemCluster(t, t0)
	m.addNode("a0", "a", corev1.ConditionTrue)
	m.addNode("a1", "a", corev1.ConditionTrue)
	m.addNode("b0", "b", corev1.ConditionTrue)
	c := m.controller(Config{})
	c.monitor(ctx)

	// a0 dies first and is tainted while the others are fine.
	for range 12 {
		m.clock.Step(5 * time.Second)
		m.postStatus("a1", corev1.ConditionTrue)
		m.postStatus("b0", corev1.ConditionTrue)
		c.monitor(ctx)
		c.taintPass(ctx)
	}
	if !slices.Contains(m.taintKeysOf("a0"), unreachableNoExec) {
		t.Fatalf("a0 taints %v, want NoExecute unreachable", m.taintKeysOf("a0"))
	}

	// Then everything goes silent (say our lease watch stalled).
	for range 12 {
		m.clock.Step(5 * time.Second)
		c.monitor(ctx)
		c.taintPass(ctx)
	}
	for _, n := range []string{"a0", "a1", "b0"} {
		wantCondition(t, m.get(n), corev1.NodeReady, corev1.ConditionUnknown, reasonUnknown, messageUnknown)
		if taints := m.taintKeysOf(n); slices.Contains(taints, unreachableNoExec) {
			t.Errorf("%s tainted NoExecute in master disruption mode: %v", n, taints)
		}
		if taints := m.taintKeysOf(n); !slices.Contains(taints, unreachableNoSchedule) {
			t.Errorf("%s lacks the NoSchedule taint: %v", n, taints)
		}
	}
	for zone, s := range c.zoneStates {
		if s != zoneFullDisruption {
			t.Errorf("zone %q is %s", zone, s)
		}
	}
	for range 20 {
		m.clock.Step(5 * time.Second)
		c.monitor(ctx)
		c.taintPass(ctx)
	}
	for _, n := range []string{"a0", "a1", "b0"} {
		if taints := m.taintKeysOf(n); slices.Contains(taints, unreachableNoExec) {
			t.Errorf("%s tainted NoExecute while still in disruption mode: %v", n, taints)
		}
	}

	// b0 comes back: leaving the mode resets every probe timestamp to now,
	// so the others get a full grace period before any NoExecute taint.
	m.clock.Step(5 * time.Second)
	m.renew("b0", m.clock.Now())
	m.postStatus("b0", corev1.ConditionTrue)
	c.monitor(ctx)
	exit := mono(c.cfg.Monotonic())
	for _, n := range []string{"a0", "a1", "b0"} {
		if h, _ := c.healthOf(n); h.probe != exit {
			t.Errorf("%s probe timestamp %v, want reset to %v", n, time.Duration(h.probe), time.Duration(exit))
		}
	}
	if c.zoneStates[zoneKey(m.get("b0"))] != zoneNormal {
		t.Errorf("zone b is %s after b0 came back", c.zoneStates[zoneKey(m.get("b0"))])
	}
	// Zone a is still fully down (but not every zone): its nodes are tainted
	// again at the normal rate.
	for range 3 {
		m.clock.Step(5 * time.Second)
		m.postStatus("b0", corev1.ConditionTrue)
		c.monitor(ctx)
		c.taintPass(ctx)
	}
	if !slices.Contains(m.taintKeysOf("a0"), unreachableNoExec) && !slices.Contains(m.taintKeysOf("a1"), unreachableNoExec) {
		t.Errorf("no node of zone a tainted NoExecute after leaving disruption mode: %v %v", m.taintKeysOf("a0"), m.taintKeysOf("a1"))
	}
}
