// Package leasecontroller keeps one Lease renewed the way Kubernetes'
// component-helpers lease controller does for both the kubelet (node
// heartbeats) and kube-apiserver (identity leases): every renew interval
// (jittered, measured after each sync) it PUTs a copy of the last lease the
// server returned with a fresh renewTime, without a GET; on failure it GETs
// the lease (creating it on 404) and retries the update up to five times,
// re-reading after each 409 Conflict.
//
// Invariants:
//   - The controller writes only name, namespace, holderIdentity,
//     leaseDurationSeconds and renewTime, plus whatever Config.Prepare adds;
//     it never sets acquireTime or leaseTransitions.
//   - Every update carries the resourceVersion and uid of the object it was
//     built from, so a lease that changed or was deleted meanwhile answers
//     409 and is re-read, never silently overwritten or resurrected.
//   - Run is the only goroutine that touches a Controller's state, and it
//     returns once its context ends.
package leasecontroller
