package nodelifecycle

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// zoneState is a zone's health as of the last pass (reference §3.4).
type zoneState string

const (
	zoneInitial           zoneState = "Initial"
	zoneNormal            zoneState = "Normal"
	zonePartialDisruption zoneState = "PartialDisruption"
	zoneFullDisruption    zoneState = "FullDisruption"
)

// labelExcludeDisruption leaves a node out of the zone health counts.
const labelExcludeDisruption = "node.kubernetes.io/exclude-disruption"

// zoneKey is the zone a node belongs to, from its topology labels (the GA
// ones, else the deprecated failure-domain ones); "" when it has neither.
func zoneKey(n *corev1.Node) string {
	region := n.Labels[corev1.LabelTopologyRegion]
	if region == "" {
		region = n.Labels[corev1.LabelFailureDomainBetaRegion]
	}
	zone := n.Labels[corev1.LabelTopologyZone]
	if zone == "" {
		zone = n.Labels[corev1.LabelFailureDomainBetaZone]
	}
	if region == "" && zone == "" {
		return ""
	}
	// The NUL cannot appear in label values, so the key is unambiguous.
	return region + ":\x00:" + zone
}

// zoneCounts are a zone's nodes by their Ready condition this pass.
type zoneCounts struct{ ready, notReady int }

// add counts one more node, whose Ready condition is cond (nil for a node
// with none, which counts as not ready).
func (z zoneCounts) add(cond *corev1.NodeCondition) zoneCounts {
	if cond != nil && cond.Status == corev1.ConditionTrue {
		z.ready++
	} else {
		z.notReady++
	}
	return z
}

// zoneTally counts a pass's nodes per zone. Consecutive nodes are almost
// always in one zone, so their counts are kept aside until another zone
// comes: one map lookup per run of nodes instead of two per node.
type zoneTally struct {
	counts map[string]zoneCounts
	zone   string
	cur    zoneCounts
	open   bool // cur holds zone's counts, not yet in counts
}

func (t *zoneTally) add(zone string, cond *corev1.NodeCondition) {
	if !t.open || zone != t.zone {
		t.flush()
		t.zone, t.cur, t.open = zone, t.counts[zone], true
	}
	t.cur = t.cur.add(cond)
}

func (t *zoneTally) flush() {
	if t.open {
		t.counts[t.zone] = t.cur
		t.open = false
	}
}

// done returns the counts per zone.
func (t *zoneTally) done() map[string]zoneCounts {
	t.flush()
	return t.counts
}

func (z zoneCounts) size() int { return z.ready + z.notReady }

// computeZoneState judges a zone from its nodes' Ready conditions.
func (c *Controller) computeZoneState(z zoneCounts) zoneState {
	switch {
	case z.ready == 0 && z.notReady > 0:
		return zoneFullDisruption
	case z.notReady > 2 && float64(z.notReady)/float64(z.size()) >= c.cfg.UnhealthyZoneThreshold:
		return zonePartialDisruption
	default:
		return zoneNormal
	}
}

// zoneRate is the NoExecute tainting rate for a zone of size nodes in state s.
func (c *Controller) zoneRate(s zoneState, size int) float64 {
	switch s {
	case zonePartialDisruption:
		if size > c.cfg.LargeClusterSizeThreshold {
			return c.cfg.SecondaryEvictionRate
		}
		return 0
	default:
		// Normal, and FullDisruption of one zone among healthy ones: the
		// zone really is down, taint at the normal rate.
		return c.cfg.EvictionRate
	}
}

// handleDisruption updates the zone states from this pass's counts of
// Ready nodes, switching the tainting rates, and enters or leaves the
// all-zones-down mode (where nothing is tainted NoExecute). The nodes of
// this pass are those in c.slots.
func (c *Controller) handleDisruption(ctx context.Context, zones map[string]zoneCounts) {
	newStates := map[string]zoneState{}
	allAreFull := true
	for zone, counts := range zones {
		s := c.computeZoneState(counts)
		newStates[zone] = s
		if s != zoneFullDisruption {
			allAreFull = false
		}
		if _, ok := c.zoneStates[zone]; !ok {
			c.zoneStates[zone] = zoneInitial
		}
	}
	allWereFull := true
	for zone, s := range c.zoneStates {
		if _, ok := zones[zone]; !ok {
			delete(c.zoneStates, zone)
			continue
		}
		if s != zoneFullDisruption {
			allWereFull = false
		}
	}
	if allAreFull && allWereFull {
		return // still in (or never left an empty cluster for) the same mode
	}

	if allAreFull {
		c.log.Info("Controller detected that all Nodes are not-Ready. Entering master disruption mode", "zones", len(zones))
		for _, id := range c.slots {
			c.markReachable(ctx, &c.nodes.at(id).view)
		}
		for zone := range c.zoneStates {
			c.queue(zone).setRate(0)
			c.zoneStates[zone] = zoneFullDisruption
		}
		return
	}
	if allWereFull {
		c.log.Info("Controller detected that some Nodes are Ready. Exiting master disruption mode")
		now := mono(c.cfg.Monotonic())
		for _, id := range c.slots {
			if st := c.nodes.at(id); st.hasHealth {
				st.health.probe = now
			}
		}
		for zone := range c.zoneStates {
			c.queue(zone).setRate(c.zoneRate(newStates[zone], zones[zone].size()))
			c.zoneStates[zone] = newStates[zone]
		}
		return
	}
	for zone, old := range c.zoneStates {
		s := newStates[zone]
		if s == old {
			continue
		}
		c.log.Info("Controller detected that zone is now in new state", "zone", zone, "newState", string(s))
		c.queue(zone).setRate(c.zoneRate(s, zones[zone].size()))
		c.zoneStates[zone] = s
	}
}
