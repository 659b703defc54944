// Package watchcache keeps every object under a storage prefix in memory,
// together with a bounded window of the most recent change events, and fans
// those events out to any number of watchers. The API server serves list, get
// with resourceVersion=0/unset and every watch from it; in-process controllers
// subscribe to it directly.
//
// Invariants:
//
//   - The cache mirrors the store: Run lists the prefix at a revision L, then
//     watches from L, so the map of current objects is the store's state at
//     Revision(). Revision() only ever grows.
//   - The event window holds at most Options.Window events in revision order
//     (strictly increasing, except that the synthetic deletions of a re-list
//     share the re-list's revision). Events with revision < OldestRevision() are
//     gone: a watch from R needs R >= OldestRevision()-1, else *TooOldError.
//   - A watcher sees every matching change after its start revision exactly
//     once, in revision order, with no gaps; it reads the shared window through
//     its own cursor, so the dispatcher never waits on (or copies for) any
//     watcher. A watcher whose unread events are evicted from the window is too
//     slow: its channel closes after the events it already took, and its client
//     re-watches from the last revision it saw. So is a watcher whose reader
//     leaves its Events buffer full for Options.SlowWatcherTimeout (5 s by
//     default): the API's watch stream then ends and the client re-lists,
//     as with kube-apiserver's "Forcing watcher close due to
//     unresponsiveness".
//   - Memory per watcher is bounded. A watcher holds at most
//     WatcherBuffer (100) events in its channel plus readBatch (256) copied
//     out of the window, each a header of at most 80 bytes and a pointer to an object
//     shared with the cache and every other watcher; it pins an object on
//     its own only once the window has evicted it. Its worst case is thus
//     (WatcherBuffer + readBatch) x the largest object, an object being at
//     most a 3 MiB request body: about 180 KB for 356 Lease events of 0.5 KB,
//     1 GiB only for 356 distinct maximal objects evicted while it waited.
//     A watch with InitialState also holds a 64-byte copy of every entry
//     under its prefix (6.4 MB per 100,000 objects, plus the versions of
//     those objects that change meanwhile) until its initial events are
//     sent. Either way a reader that stops reading keeps it for at most
//     SlowWatcherTimeout; then the watcher's goroutine ends and drops all
//     of it but the events already in its channel.
//   - ListPage visits keys in order from its start and stops after Limit
//     matches, so a page costs its size, not the list's. The objects all
//     unreleased pages hold are bounded by Options.ListBudget (200,000 by
//     default): a list waits for its share, and one larger than the whole
//     budget runs alone.
//   - A BOOKMARK at revision R is sent only after every event with revision <= R
//     that the watcher matches has been sent.
//   - Objects handed out (Get, List, a watcher's Event.Object) are shared between all
//     readers and never mutated after publication: callers must DeepCopy before
//     changing them. Their metadata.resourceVersion is the storage ModRevision
//     (the deletion's revision for DELETED events).
//   - With Options.Encode set, an object unchanged for about Options.ColdAfter
//     is kept compressed (cold.go) and decoded again for every read; readers
//     copy entries under the lock and decode after releasing it, so a cold
//     object costs no reader or writer any lock time. A resource whose
//     objects are written again soon after going cold (leases renewed less
//     often than ColdAfter) is held decoded longer, up to 8 x ColdAfter
//     (demote.go). A cold object read twice is two equal objects, not one:
//     nothing may rely on the identity of the objects the cache hands out.
//   - With Options.Adopt set, a put whose writer handed its decoded object
//     over with Expect (an update of this process, on either store)
//     publishes that object instead of decoding the value: the cache owns
//     the hand-off (handoff.go), matching the event by key and exact value
//     bytes. The writer gave the object up when it handed it over, so the
//     rule above (never mutated after publication) holds for it as for any
//     other.
//   - With Options.Thin set, an event whose key has a newer event that
//     Thin found differs from it only in a Delta holds that Delta instead
//     of its object (thin.go); a watcher reading it gets an object rebuilt
//     by Options.Thicken, equal to the one the event was made with but its
//     own, not shared. The newest event of every key holds its object.
//   - The store's watch delivers batches (a group commit, an etcd watch
//     response); the cache applies each batch, merged with any others
//     already waiting up to maxBatch events, under one lock acquisition
//     and one wake-up of its watchers.
//   - The storage watch asks for progress (storage.WithProgressNotify): a
//     progress event at R moves Revision() to R with no event, since every
//     change up to R is applied. A read waiting for a revision asks the
//     store for progress every 100 ms (one request per interval for all
//     waiters), so writes outside the prefix, which bring no event, do not
//     keep consistent reads waiting (KEP-1904, KEP-2340).
//   - When the storage watch ends the cache re-watches from the last revision it
//     applied; if that history was compacted away it re-lists, applies the
//     differences, and ends every watcher started before the re-list: their
//     clients re-watch and are told the gap is too old (410), never fed a
//     summary of it as if it were every change.
package watchcache
