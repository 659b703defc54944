// Package election is the coordinated leader election controller of
// `leasehold serve` (KEP-4355, kube-apiserver's leader-election-controller):
// it watches coordination.k8s.io/v1beta1 LeaseCandidates and, for every
// Lease that candidates name, elects the best candidate under the
// OldestEmulationVersion strategy and writes the result into the Lease.
//
// An election pings the candidates that have not renewed recently (it sets
// spec.pingTime; client-go's candidate answers by renewing spec.renewTime),
// waits up to ElectionDuration for the answers, picks among the candidates
// that answered (and the sitting holder), and then either creates the Lease for the electee, hands an
// expired or released Lease to it, or, when a live holder is not the electee,
// sets spec.preferredHolder so that the holder ends its term (client-go's
// coordinated elector stops renewing; leasehold elect also releases).
//
// Invariants:
//   - The controller never takes a live Lease from its holder: it writes
//     holderIdentity only when the Lease is missing, expired by the server's
//     clock, or has no holder. Everything else is a preferredHolder request.
//   - Every write is a PUT of an object read from the watch cache with its
//     resourceVersion, so a write based on a stale read fails with a conflict
//     and is retried from a fresher read; it never overwrites a renewal.
//   - Objects read from the watch cache are shared and are deep-copied
//     before any change.
//   - Candidates with another strategy are left alone: under KEP-4355 a
//     third-party controller may implement it.
//
// The controller itself runs on one replica at a time: `serve` starts it
// only while holding Lease kube-system/leader-election-controller, as
// kube-apiserver does (package server, leaderelect.go).
//
// The candidates an election chooses among are those that answered the
// latest ping plus the sitting holder of a live Lease, which proves it is
// alive by renewing the Lease: a holder slow to answer a ping is never
// displaced by a candidate it outranks (under OldestEmulationVersion, never
// by one with a newer emulation version).
//
// One deliberate difference from kube-apiserver: when the controller gives
// the Lease to a different holder it adds 1 to spec.leaseTransitions, as
// client-go does when an uncoordinated candidate takes over, so that
// leaseTransitions keeps counting holder changes and stays usable as a
// fencing token under coordinated election too.
package election
