// Package nodelifecycle is Leasehold's node lifecycle controller, the part of
// kube-controller-manager's controller that judges node health from
// heartbeats and reacts to it (reference §3): a node is alive while its
// kube-node-lease Lease's renewTime changes or its Ready condition's
// lastHeartbeatTime changes; after the grace period its Ready and pressure
// conditions become Unknown, it gets the NoSchedule and (rate-limited, per
// zone) NoExecute unreachable / not-ready taints, and events record what the
// controller saw. Pod eviction is not done here: Leasehold serves no pods.
//
// Invariants:
//
//   - Probe timestamps are readings of the controller's monotonic clock
//     (Config.Monotonic), never wall-clock times and never times written by
//     nodes (clock skew): a node's silence is the monotonic time since the
//     controller saw its renewTime or Ready heartbeat change, so a step of
//     the wall clock, forward or back, on the server or the nodes, marks no
//     node Unknown and keeps no silent node alive. Only a changed renewTime
//     (earlier ones too: a node whose clock stepped back is renewing) or a
//     changed Ready heartbeat moves them; the one wall-clock age used is a
//     never-posted node's creation age, converted once at first sight.
//   - All decisions and bookkeeping happen on one goroutine (Run's), so the
//     per-node and per-zone state needs no locks. Only the API writes that a
//     pass (or a round of watched node changes) decided on go out in
//     parallel, at most writeWorkers at once like kube-controller-manager's
//     status-update workers, and their outcomes are applied back on Run's
//     goroutine in node order.
//   - Objects read from the watch cache are shared: the controller copies a
//     node before changing it and never changes a cached object.
//   - A monitor pass reads each node through a view (view.go): the few
//     fields it judges, copied out and rebuilt only when the node's store
//     revision changes, held in the node's record in the controller's node
//     table (nodetable.go). The controller keeps no node object between
//     passes, nor anything pointing into one; a node it writes is read
//     whole at that moment.
//   - When every zone is in full disruption (no Ready node anywhere) the
//     controller adds no NoExecute taint and removes the ones it added: the
//     fault is most likely on the server side (a stalled lease watch, issue
//     kubernetes#121793), not in every node at once. Leaving that mode resets
//     every probe timestamp to now, so nodes get a full grace period again.
package nodelifecycle
