package nodelifecycle

// StoreStatus is what the server knows of its own store (etcd, or the
// embedded store's disk) at one moment.
type StoreStatus struct {
	// Down is set while the store does not answer (or refuses writes).
	Down bool
	// Outages counts the times the store went down; it only grows.
	Outages uint64
}

// storeOutage reports whether this monitor pass must judge no node because
// of an outage of the control plane's own store, the "all nodes silent"
// case of reference §3.4 seen from its cause: while the store is down no
// node can renew its lease or post status, so silence says nothing about
// the nodes. Nothing is judged while it lasts, and once it is over every
// probe timestamp restarts at now, as on leaving master disruption mode:
// the time the store was away is not counted in any node's silence, and
// nodes get a full grace period to renew through the recovered store.
func (c *Controller) storeOutage() bool {
	if c.cfg.StoreStatus == nil {
		return false
	}
	s := c.cfg.StoreStatus()
	if s.Down {
		if !c.storeDown {
			c.log.Info("the control plane's store is unreachable: node health is not judged until it is back")
		}
		c.storeDown = true
		return true
	}
	if s.Outages == c.storeOutages && !c.storeDown {
		return false
	}
	c.storeDown, c.storeOutages = false, s.Outages
	now := mono(c.cfg.Monotonic())
	n := 0
	c.nodes.all(func(st *nodeState) {
		if st.hasHealth {
			st.health.probe = now
			n++
		}
	})
	c.log.Info("the control plane's store is back: every node gets a full grace period", "nodes", n)
	return false
}
