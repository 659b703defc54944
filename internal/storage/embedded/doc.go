// Package embedded is Leasehold's default storage driver: a storage.Interface
// on a local pebble database, durable without any external process.
//
// Design and invariants:
//
//   - One committer goroutine owns every write. It takes whatever write
//     requests are waiting, checks each precondition against an in-memory
//     index (key -> modRevision, createRevision) that only it touches, assigns
//     consecutive revisions, and writes them all in one pebble batch committed
//     with pebble.Sync. Concurrent writers therefore share one fsync (group
//     commit), and a write is acknowledged only after that fsync.
//   - Each batch also writes the event log (one record per revision: the
//     write and the revision it replaced, whose own record holds the value it
//     replaced) and the newest revision, so after a crash Open finds exactly
//     the acknowledged writes and continues the revision sequence from the
//     newest durable one.
//   - Reads at an older revision start from the current values and undo the
//     log records newer than that revision, all inside one pebble snapshot, so
//     a concurrent commit or compaction never tears a read.
//   - Watchers replay the log from their revision and then take live events
//     from the committer; they switch over only once caught up (under the same
//     lock the committer publishes under), so there is no gap or duplicate.
//     The committer never blocks on a watcher: one whose buffer is full is
//     detached and falls back to replaying from the log, and is closed only if
//     compaction has meanwhile removed the history it needs.
//   - Disk holds each value once, in the log record of the write that made
//     it; a key's current state is only its revisions, pointing at that
//     record (layout.go).
//   - Memory holds revisions, not values. Events carry the previous value
//     only for watchers that want it (not storage.WithoutPrevValue); for them
//     the committer reads it back from the log before publishing a batch.
//   - Compact records the compacted revision, then deletes every log record
//     at or below it that a write at or below it replaced, and the records
//     of deletes. The newest
//     record of every live key stays, since undoing or replaying the key's
//     next write needs its value: the log holds at most one record per live
//     key at or below the compacted revision, and every record after it.
package embedded
