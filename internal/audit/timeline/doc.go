// Package timeline answers "who did what to this object, and why was it
// allowed?" from audit logs: it reads a log and its rotated (and gzipped)
// files, keeps one entry per request for the object asked about, and
// prints them in time order, folding repeats (a node retrying a get of its
// deleted lease every few seconds) into one line.
//
// A Node and its heartbeat Lease (kube-node-lease/<node name>) are one
// story, so a timeline for either includes the other.
//
// Invariants:
//   - One entry per request (auditID): its last stage (Panic,
//     ResponseComplete, ResponseStarted, RequestReceived, in that order of
//     preference), so a policy that logs several stages shows each request
//     once.
//   - Entries are sorted by the time the request was received, whatever
//     file they came from.
package timeline
