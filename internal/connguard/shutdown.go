package connguard

import (
	"context"
	"net/http"
	"time"

	"golang.org/x/net/http2"
)

// resendGoawayEvery is how often, while the server shuts down, HTTP/2
// connections that started serving since the last round are sent their
// graceful GOAWAY.
const resendGoawayEvery = 100 * time.Millisecond

// shutdown sends every HTTP/2 connection a graceful GOAWAY when the server
// shuts down, including connections that start serving after Shutdown
// began.
//
// x/net sends its GOAWAYs once, from the shutdown hook ConfigureServer
// registers, to the connections registered at that moment. A connection
// accepted before the listener closed but whose TLS handshake ends after
// the hook ran registers later and is never told: http.Server.Shutdown
// then waits for it until its deadline, as long as the client keeps the
// connection open. In-process controllers make this likely, not rare: the
// server ends their watches at shutdown and they dial again at once (test
// servers took their whole 30 s to stop about once in 20 runs).
//
// So the HTTP/2 server that serves the connections is configured on a
// server of its own (goaway), whose Shutdown only runs x/net's hook, and
// the real server's shutdown hook runs it every resendGoawayEvery until no
// accepted connection is left. x/net sends a connection at most one
// GOAWAY, however often its hook runs. (ConfigureServer may be called only
// once per http2.Server, so the real server is configured with another one
// for ALPN; see Guard.Server.)
type shutdown struct {
	goaway *http.Server
	// open is how many accepted connections are not closed yet: any of
	// them may still start serving HTTP/2.
	open func() int64
}

// configure makes h2 the HTTP/2 server whose connections srv's shutdown
// sends GOAWAY to.
//
//lint:ignore SA1019 see Guard.Server
func (s *shutdown) configure(srv *http.Server, h2 *http2.Server, open func() int64) error {
	// The goaway server's own IdleTimeout (0) would otherwise be h2's.
	//lint:ignore SA1019 see Guard.Server
	h2.IdleTimeout = srv.IdleTimeout
	s.goaway, s.open = &http.Server{}, open
	//lint:ignore SA1019 see Guard.Server
	if err := http2.ConfigureServer(s.goaway, h2); err != nil {
		return err
	}
	srv.RegisterOnShutdown(s.run)
	return nil
}

// run is the real server's shutdown hook. It ends when the last accepted
// connection has closed, which Shutdown waits for (or Close forces).
func (s *shutdown) run() {
	for {
		// The goaway server has no listener or connection: its Shutdown
		// starts x/net's hook and returns at once.
		_ = s.goaway.Shutdown(context.Background())
		if s.open() == 0 {
			return
		}
		time.Sleep(resendGoawayEvery)
	}
}
