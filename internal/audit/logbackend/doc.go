// Package logbackend writes audit events as JSON lines, one event per line,
// to a file rotated by size (or to standard output), the way
// kube-apiserver's --audit-log-* flags do.
//
// Rotated files are named as kube-apiserver's (lumberjack's) are, so tools
// read both: audit.log becomes audit-2006-01-02T15-04-05.000.log (UTC), and
// with compression audit-2006-01-02T15-04-05.000.log.gz.
//
// Invariants:
//   - Each event is written with one write call of a whole line, so a
//     process killed at any moment (kill -9) leaves every line it wrote
//     complete: there is never a torn line to skip or a line lost across a
//     rotation (the rename happens between two writes).
//   - A compressed file appears under its final name only once complete
//     (written to a temporary name, synced, renamed), and the uncompressed
//     original is removed only after that.
//   - Batch mode never blocks ProcessEvents: a full buffer drops the event
//     and counts it in apiserver_audit_error_total{plugin="log"}.
//   - The only goroutine is Run's caller: it writes batched events and
//     compresses and prunes rotated files; Run returns when its context
//     ends, after writing what the buffer held.
package logbackend
