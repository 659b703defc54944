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

// computeZoneState judges a zone from its nodes' Ready conditions (nil for a
// node with none, which counts as not ready).
func (c *Controller) computeZoneState(conds []*corev1.NodeCondition) zoneState {
	ready, notReady := 0, 0
	for _, cond := range conds {
		if cond != nil && cond.Status == corev1.ConditionTrue {
			ready++
		} else {
			notReady++
		}
	}
	switch {
	case ready == 0 && notReady > 0:
		return zoneFullDisruption
	case notReady > 2 && float64(notReady)/float64(ready+notReady) >= c.cfg.UnhealthyZoneThreshold:
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

// handleDisruption updates the zone states from this pass's Ready
// conditions, switching the tainting rates, and enters or leaves the
// all-zones-down mode (where nothing is tainted NoExecute). nodes are the
// nodes of this pass.
func (c *Controller) handleDisruption(ctx context.Context, zoneConds map[string][]*corev1.NodeCondition, nodes []*nodeView) {
	newStates := map[string]zoneState{}
	allAreFull := true
	for zone, conds := range zoneConds {
		s := c.computeZoneState(conds)
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
		if _, ok := zoneConds[zone]; !ok {
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
		c.log.Info("Controller detected that all Nodes are not-Ready. Entering master disruption mode", "zones", len(zoneConds))
		for _, v := range nodes {
			c.markReachable(ctx, v)
		}
		for zone := range c.zoneStates {
			c.queue(zone).setRate(0)
			c.zoneStates[zone] = zoneFullDisruption
		}
		return
	}
	if allWereFull {
		c.log.Info("Controller detected that some Nodes are Ready. Exiting master disruption mode")
		now := c.clock.Now()
		for _, v := range nodes {
			if h, ok := c.health[v.name]; ok {
				h.probe = stampOf(now)
				c.health[v.name] = h
			}
		}
		for zone := range c.zoneStates {
			c.queue(zone).setRate(c.zoneRate(newStates[zone], len(zoneConds[zone])))
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
		c.queue(zone).setRate(c.zoneRate(s, len(zoneConds[zone])))
		c.zoneStates[zone] = s
	}
}
