// Package garbagecollector is Leasehold's garbage collector: the controller
// that deletes objects whose owners (metadata.ownerReferences) are gone, and
// carries out the Foreground and Orphan propagation policies that the API
// server starts with the foregroundDeletion and orphan finalizers. It is
// generic: it works over every resource in the served registry.Set, so Lease
// → Node ownership (the kubelet's node lease) is handled like any other.
//
// How it works: one watch on the watch cache (the common key prefix of every
// served resource, with InitialState) feeds a dependency graph, owner storage
// key → dependents. Events put storage keys on a rate-limited work queue, and
// workers look at each key's current state in the cache and act through the
// loopback client, so every write is validated like any client's.
//
// Invariants:
//
//   - A dependent is deleted only after every owner reference was verified
//     dangling by a consistent read: the owner (looked up by kind and name)
//     is absent, or present with another uid. The cache is consulted first;
//     when it does not show the referenced owner, a loopback GET (which waits
//     for the cache to reach the store's revision) decides, so a lagging
//     cache never causes a deletion. Deletes carry a uid precondition, so a
//     dependent re-created under the same name is never hit.
//   - Owner kinds that are not served, and namespaced owners of cluster-scoped
//     dependents, cannot be verified: such references count as solid, are
//     never removed, and (for the latter) raise an OwnerRefInvalidNamespace
//     warning, as in Kubernetes.
//   - An owner's foregroundDeletion or orphan finalizer is removed only once
//     the graph has caught up with the owner's own revision, so every
//     dependent that existed when its deletion began has been considered.
//   - Objects from the cache are shared and never mutated; writes are JSON
//     merge patches carrying the resourceVersion they were computed from,
//     so a concurrent change makes them fail with a conflict and retry.
package garbagecollector
