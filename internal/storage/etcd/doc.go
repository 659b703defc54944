// Package etcd is Leasehold's distributed storage driver: a storage.Interface
// on an etcd v3 cluster, selected by `leasehold serve --etcd-servers`.
//
// Design and invariants:
//
//   - Revisions are etcd's revisions and resourceVersions are therefore the
//     same numbers kube-apiserver would serve from the same cluster. etcd's
//     revision grows by one per write transaction, so the storage.Interface
//     rule "+1 per successful write" holds as long as nothing else writes to
//     the cluster; other writers (another `leasehold serve` replica, another
//     program) only make the gaps bigger, which every caller already accepts.
//   - Every write is one etcd transaction whose compare is the precondition:
//     Create is If(CreateRevision==0) Then(Put); Update and conditional Delete
//     are If(ModRevision==expected) Then(write) Else(Get), the Else read telling
//     ErrConflict from ErrNotFound without a second round trip. A write is
//     acknowledged by etcd only once a quorum has it in its WAL, which is
//     storage.Interface's durability rule.
//   - Requests go to one member, the leader: the client connects to the
//     first endpoint that answers (pick-first, balance.go), the leader
//     first, and moves to the new leader within DefaultLeaderCheckInterval
//     of a leader change (leader.go); a follower would forward each write.
//     A member that goes silent while its connection stays up (a partition
//     dropping packets) is left within two status timeouts of that check
//     for one that answers (failover.go), and gRPC keepalive closes such a
//     connection after about 40 s, as kube-apiserver's client does.
//     A lost connection is tried again at least every 2 s (reconnect.go),
//     not gRPC's up to 120 s, so a replica cut off from etcd answers again
//     within about that once the cluster is back.
//   - Each etcd watch response is one batch of the storage watch, so a
//     response of many events costs its watcher one hand-over.
//   - Keys: Leasehold's keys all start with "/registry" (for example
//     "/registry/leases/kube-node-lease/node-1"). The driver replaces that
//     leading "/registry" with Config.Prefix, kube-apiserver's --etcd-prefix.
//     With the default Prefix "/registry" keys are stored verbatim, exactly
//     where kube-apiserver keeps them; Prefix "/tenant-a/registry" stores
//     "/tenant-a/registry/leases/...", so several installations can share
//     one cluster without seeing each other's keys.
//   - Watch is an etcd watch from fromRevision+1, with previous values unless
//     the caller does without them (storage.WithoutPrevValue), and with
//     etcd's progress notifications as storage.EventProgress when asked
//     (storage.WithProgressNotify) on etcd 3.4.25, 3.5.8 or later
//     (progress.go says why not before). etcd
//     reports compaction on the watch itself, after the watch was created;
//     the driver therefore first probes the revision with a Range (which
//     fails with ErrCompacted synchronously) so Watch can return
//     storage.ErrCompacted as the interface promises, and a compaction that
//     races the probe ends the stream (closed channel) so the caller re-watches
//     and then gets the error. Watches end when their context ends, when etcd
//     cancels them (compaction, lost leader) or when the Store closes.
//   - Compaction: etcd does not expose its compacted revision. Every Range
//     at a revision below it fails with ErrCompacted and every one at or
//     above it (up to the current revision) succeeds, so CompactedRevision
//     finds it by binary search over revisions, starting from the newest
//     compaction this Store already knows of (its own Compact calls and
//     earlier searches). That takes a handful of cheap Range calls and sees
//     compactions made by other replicas or by etcd's own auto-compaction.
//   - The optional compactor (Config.CompactInterval, as kube-apiserver's
//     --etcd-compaction-interval) compacts every interval at the revision it
//     saw one interval earlier, so at least one interval of history is kept.
//     Replicas sharing a cluster each run their own; a compaction another one
//     already passed is a no-op.
package etcd
