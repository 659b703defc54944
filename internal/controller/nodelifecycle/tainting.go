package nodelifecycle

import (
	"context"
	"iter"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// taintForReadiness acts on a node's NoExecute taints given its Ready status
// as observed at the start of this pass (processTaintBaseEviction): a node
// already carrying the opposite taint has it swapped at once; otherwise it
// is queued for its zone's rate-limited tainting; a Ready node loses both.
func (c *Controller) taintForReadiness(ctx context.Context, v *nodeView, ready corev1.ConditionStatus) {
	switch ready {
	case corev1.ConditionFalse:
		if v.taints.has(unreachableNoExecute) {
			c.swap(ctx, v.name, notReadyNoExecute, unreachableNoExecute)
			return
		}
		c.markForTainting(v, notReadyNoExecute)
	case corev1.ConditionUnknown:
		if v.taints.has(notReadyNoExecute) {
			c.swap(ctx, v.name, unreachableNoExecute, notReadyNoExecute)
			return
		}
		c.markForTainting(v, unreachableNoExecute)
	case corev1.ConditionTrue:
		c.markReachable(ctx, v)
	}
}

// swap replaces one NoExecute taint by the other straight away; a failure
// is retried by a later pass.
func (c *Controller) swap(ctx context.Context, name string, add, remove corev1.Taint) bool {
	err := c.cluster.swapTaints(ctx, name, stamped([]corev1.Taint{add}, metav1.NewTime(c.clock.Now())), []corev1.Taint{remove})
	if err != nil {
		if ctx.Err() == nil {
			c.log.Error("swapping NoExecute taints failed; will retry", "node", name, "add", add.Key, "remove", remove.Key, "err", err)
		}
		return false
	}
	c.log.Info("node tainted NoExecute", "node", name, "taint", add.Key)
	return true
}

// markForTainting queues node v for taint t in its zone. If v lacks t
// although it was processed (the taint was removed behind our back) it is
// queued afresh; if it has it, it stays processed and is not queued again;
// if it is still waiting, it keeps its place.
func (c *Controller) markForTainting(v *nodeView, t corev1.Taint) {
	q := c.queue(v.zone())
	if !v.taints.has(t) && q.processed(v.name) {
		q.forget(v.name)
	}
	if q.add(v.name) {
		c.log.Debug("node queued for NoExecute tainting", "node", v.name, "taint", t.Key)
	}
}

// markReachable removes both NoExecute taints from node v and takes it out
// of its zone's queue.
func (c *Controller) markReachable(ctx context.Context, v *nodeView) {
	c.queue(v.zone()).forget(v.name)
	if !v.taints.has(unreachableNoExecute) && !v.taints.has(notReadyNoExecute) {
		return
	}
	if err := c.cluster.swapTaints(ctx, v.name, nil, []corev1.Taint{unreachableNoExecute, notReadyNoExecute}); err != nil {
		if ctx.Err() == nil {
			c.log.Error("removing NoExecute taints failed; will retry", "node", v.name, "err", err)
		}
		return
	}
	c.log.Info("node reachable again: NoExecute taints removed", "node", v.name)
}

// taintPass drains every zone's NoExecute queue as far as its rate allows
// (doNoExecuteTaintingPass). Each node is judged from its current Ready
// condition: it may have recovered while it waited.
func (c *Controller) taintPass(ctx context.Context) {
	zones := make([]string, 0, len(c.tainters))
	for z := range c.tainters {
		zones = append(zones, z)
	}
	sort.Strings(zones)
	for _, z := range zones {
		c.tainters[z].drain(func(name string) bool {
			n, ok := c.cluster.node(name)
			if !ok {
				return true
			}
			cond := readyCondition(&n.Status)
			if cond == nil {
				return true
			}
			switch cond.Status {
			case corev1.ConditionFalse:
				return c.swap(ctx, name, notReadyNoExecute, unreachableNoExecute)
			case corev1.ConditionUnknown:
				return c.swap(ctx, name, unreachableNoExecute, notReadyNoExecute)
			default:
				return true
			}
		})
	}
}

// noSchedulePasses makes the controller-owned NoSchedule taints of the named
// nodes match their conditions and spec.unschedulable
// (doNoScheduleTaintingPass), writing in parallel. It runs whenever nodes
// change.
func (c *Controller) noSchedulePasses(ctx context.Context, names []string) {
	c.noScheduleNodes(ctx, func(yield func(*nodeView) bool) {
		for _, name := range names {
			if n, ok := c.cluster.node(name); ok && !yield(viewOf(n)) {
				return
			}
		}
	})
}

// noScheduleNodes is noSchedulePasses for nodes already read. The views
// are only read while nodes runs: the writes come after it.
func (c *Controller) noScheduleNodes(ctx context.Context, nodes iter.Seq[*nodeView]) {
	type swap struct {
		name        string
		add, remove []corev1.Taint
		err         error
	}
	var swaps []swap
	now := metav1.NewTime(c.clock.Now())
	for v := range nodes {
		add, remove := noScheduleDiff(v)
		if len(add) == 0 && len(remove) == 0 {
			continue
		}
		swaps = append(swaps, swap{name: v.name, add: stamped(add, now), remove: remove})
	}
	inParallel(len(swaps), func(i int) {
		swaps[i].err = c.cluster.swapTaints(ctx, swaps[i].name, swaps[i].add, swaps[i].remove)
	})
	for _, sw := range swaps {
		if sw.err != nil {
			if ctx.Err() == nil {
				c.log.Error("updating NoSchedule taints failed", "node", sw.name, "err", sw.err)
			}
			continue
		}
		c.log.Info("NoSchedule taints updated", "node", sw.name, "added", taintKeys(sw.add), "removed", taintKeys(sw.remove))
	}
}

func taintKeys(ts []corev1.Taint) []string {
	keys := make([]string, len(ts))
	for i, t := range ts {
		keys[i] = t.Key
	}
	return keys
}
