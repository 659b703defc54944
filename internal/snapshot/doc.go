// Package snapshot backs up and restores a Leasehold store: `leasehold
// snapshot save` writes every key of the embedded store or of etcd, read
// at one revision, to a file; `leasehold snapshot restore` writes such a
// file into a new embedded store, or into an etcd snapshot database that
// etcd's own restore tool turns into a cluster. Between them a fleet moves
// from the embedded store to etcd and back.
//
// Invariants:
//
//   - A snapshot is consistent: every key is read at the header's revision
//     (one pebble snapshot for the embedded store, Lists pinned to one
//     revision for etcd), never a mix of before and after a write.
//   - Restoring keeps every key's ModRevision and CreateRevision, in both
//     stores, so every object keeps its resourceVersion; the restored
//     store's revision is the snapshot's (plus Options.BumpRevision), and
//     it is compacted there: a client that resumes a watch or reads a list
//     at a resourceVersion from before the snapshot gets 410 Expired and
//     relists, as after any compaction, and a conditional write with a
//     resourceVersion it read from the old store meets the object's same
//     resourceVersion (or a 409 Conflict if it changed since).
//   - A snapshot file is whole or refused: the reader checks the key order,
//     the revisions, the key count and a SHA-256 digest before it reports
//     the end, and save writes a temporary file it renames only once
//     complete.
//
// The file format (format.go) is Leasehold's own and deliberately plain: a
// magic line, a JSON header (revision, prefix, source, time), one record
// per key (key, create revision, mod revision, value) in key order, and a
// trailer with the key count and the digest. Values are the stored bytes,
// untouched (protobuf or JSON, as the store holds them). It is neither
// pebble's files (bound to one pebble version and to the embedded layout,
// with history a backup does not need) nor etcd's snapshot database (a
// bbolt file of etcd's internal schema, with raft membership and history):
// it streams in constant memory from either store, into either store, and
// is readable by anything that can read varints.
package snapshot
