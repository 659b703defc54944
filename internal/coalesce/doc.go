// Package coalesce provides a net.Conn whose writes are gathered by one
// writer goroutine per connection and sent with as few write(2) calls as
// the timing allows.
//
// Why: Go's HTTP/2 code flushes its buffer whenever its write queue is
// empty. The server queues a response's HEADERS frame, waits for it to be
// written, then queues the DATA frame; the client flushes a request's
// HEADERS and then its DATA. A small request or response therefore costs
// two TLS records and two write(2) calls, each pushing a segment through
// the loopback stack, which was the largest single share of a lease
// renewal's CPU on both ends. The writer yields once before sending, long
// enough for the frame flushed right behind the first to join it, and every
// write made while a send is in progress goes out with the next one.
//
// Invariants: bytes reach the peer in the order they were written; no more
// than 256 KiB wait in a connection (Write blocks past that, so a peer that
// stops reading still pushes back); a write deadline bounds the Writes that
// wait there (SetWriteDeadline); a write error is sticky; Close sends
// what is pending within one second and returns only after the writer
// goroutine has exited.
package coalesce
