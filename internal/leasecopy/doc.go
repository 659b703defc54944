// Package leasecopy copies coordination.k8s.io/v1 Leases from one
// Kubernetes API to another API or straight into an etcd that
// kube-apiserver stores its leases in, once or continuously (follow). It is
// what moves a live cluster's leases onto Leasehold and back without a
// blip: every lease a controller or kubelet renews on the backend it talks
// to keeps being renewed on the backend that older watches still read.
//
// Invariants:
//   - What is copied is a lease's content: its whole spec (holder, duration,
//     acquire and renew times, transitions, strategy, preferred holder),
//     labels, annotations and ownerReferences. A target object keeps its
//     own identity (uid, creationTimestamp) when it already exists; a
//     created one gets the source's uid and creationTimestamp in etcd (the
//     API assigns its own).
//   - A lease is written only when its content differs from the target's,
//     so a copy of equal content costs at most one read and no write (no
//     new resourceVersion, no watch event on the target). The target's
//     copy as last read or written is remembered per lease, so a mirrored
//     renewal usually costs one conditional write and no read.
//   - A target whose copy is newer than the source's (more transitions, or
//     as many and a later renew or acquire time) is left alone: a writer
//     that reached the target directly (a kubelet already switched over, a
//     kube-apiserver writing to etcd) is never overwritten with older
//     content. Every write is conditional on the version that was compared
//     (resourceVersion on the API, mod revision in etcd), so a concurrent
//     writer makes the copy read and compare again instead of losing its
//     write.
//   - The first pass never deletes: leases that only the target has (its
//     own identity lease, say) stay. With follow, a lease deleted on the
//     source (seen in a watch, or missing from a re-list after a broken
//     watch) is deleted on the target.
//   - Work on one lease is never done by two workers at once, and a lease
//     that changes while it waits is copied once, at its newest version.
package leasecopy
