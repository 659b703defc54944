// Package agent is the node heartbeat agent: the part of the kubelet that
// registers a Node and keeps it alive through its Lease in kube-node-lease
// and its Ready condition, with the kubelet's timings and retry rules.
//
// It talks to the API server only through client-go, so it works against
// leasehold serve and against any real Kubernetes API server alike.
//
// Invariants:
//   - The lease is named after the node, held by the node, lives in
//     kube-node-lease, and is created only once its ownerReference to the Node
//     can be set (so a node deletion always garbage-collects its lease).
//   - A renewal is one PUT of the last object the server returned, without a
//     GET; only a failure falls back to GET (and create on 404).
//   - Node status is PATCHed only when it changed or when the report period
//     has passed; the Ready heartbeat alone is not a change.
//   - An Agent holds no global state: everything comes from New's arguments,
//     so one process can run thousands of agents (the bench fleet mode).
//   - Every goroutine an Agent starts ends before Run returns.
package agent
