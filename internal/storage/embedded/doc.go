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
//     commit), and a write is acknowledged only after that fsync. Writers
//     queue their requests (up to one batch) without waiting on their
//     context's Done; the committer drops a queued write whose context
//     ended before it applies it, and a write still queued when the store
//     closes is answered ErrClosed (committer.go, submit). With
//     Options.CommitSpacing, after a batch of several writes the next
//     batch starts no sooner than the spacing after it, so that concurrent
//     writers share fewer fsyncs; a writer alone is never delayed
//     (spacing.go).
//   - Pebble's flushes and compactions are background work: their files
//     yield the processor every 16 blocks read or written, so on a busy
//     core they run in the gaps between requests (background.go); the WAL
//     never yields.
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
//   - Reads (Get, List, watch replay) show acknowledged revisions only:
//     pebble may hold a batch that is not acknowledged, briefly while it is
//     being published, or until a reopen when its sync failed.
//
// Disk faults are errors, not crashes (disk.go): writes are refused with
// storage.ErrInsufficientStorage while less than Options.ReservedBytes
// (default 64 MiB) are free, before pebble can meet a full disk; a write
// fault pebble itself meets (ENOSPC, EIO on the WAL, fatal to pebble) is
// recovered, refuses writes (ErrInsufficientStorage or
// storage.ErrUnavailable) and is healed by closing and reopening pebble as
// soon as a probe write succeeds, without a restart. A store opened with
// less than the reserve free opens read-only and heals the same way.
// Health says why writes are refused. Reads go on throughout; nothing
// acknowledged is lost, since it was synced before it was acknowledged.
//
// History (Options.Compaction): the automatic compactor keeps the newest
// KeepRevisions revisions and those written in the last KeepFor, whichever
// is more, but never more than MaxRevisions. The server sets KeepFor to
// --history-retention (default 5m: longer keeps old resourceVersions
// readable for continue tokens and watches, at the cost of disk),
// KeepRevisions to the watch cache window and MaxRevisions to ten windows.
// Its (time, revision) samples and its progress are persisted, so a store
// restarted more often than KeepFor compacts all the same, and it checks
// at once on open. A read at a revision older than the compacted one fails
// with storage.ErrCompacted (410 Expired); one at the oldest revision kept
// undoes at most MaxRevisions log records.
//
// Crash points: `// gofail: var NAME struct{}` comments in committer.go
// and compact.go mark where test/robustness crashes the server on purpose
// (before a batch is synced, after it is synced but before its answer,
// during a compaction's sweep). They are comments in every build but that
// suite's own, which compiles them into go.etcd.io/gofail failpoints.
//
// Files: the store's directory is 0700 and its files 0600, whatever the
// umask or the directory's previous mode (perm.go).
package embedded
