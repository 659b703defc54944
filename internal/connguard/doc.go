// Package connguard keeps one client, or a crowd of them, from taking the
// server down through its connections. It owns everything between the TCP
// listener and the HTTP handler: how many connections may be open, how long
// an idle or slow one may live, and how much an HTTP/2 connection may reset.
//
// Invariants:
//   - At most Limit() accepted connections are open at once. The limit is
//     the process's RLIMIT_NOFILE (its soft limit, raised to the hard one
//     at start) minus a reserve of descriptors kept for the store and the
//     server's own files, so no client can make the store fail to open a
//     file. A connection beyond the limit is accepted and closed at once,
//     counted in leasehold_connections_refused_total, and logged in one
//     summary line per interval, never one line per connection.
//   - Every connection has a deadline until it has said who it is and what
//     it wants: the TLS handshake, an HTTP/1.1 request's headers, the
//     HTTP/2 preface and every HTTP/2 header block must each complete
//     within ReadHeaderTimeout. A connection without requests in flight is
//     closed after IdleTimeout (HTTP/1.1 keep-alive and HTTP/2 alike); an
//     HTTP/2 connection that sends nothing for HTTP2ReadIdleTimeout is
//     pinged and closed unless the ping is answered within HTTP2PingTimeout.
//   - An HTTP/2 connection whose client resets streams (RST_STREAM) faster
//     than HTTP2MaxResetsPerSecond (with a burst of two seconds' worth) is
//     answered with GOAWAY(ENHANCE_YOUR_CALM) and closed: the rapid-reset
//     attack (CVE-2023-44487). Go's own server only bounds the handlers a
//     connection may have running at once, so without this a client can
//     keep that many handlers busy with work it cancels at once.
//
// The HTTP/2 checks read the frame headers of the decrypted byte stream as
// it passes to golang.org/x/net/http2's server, and write their GOAWAY
// between two of that server's frames; nothing else of HTTP/2 is parsed here.
package connguard
