package connguard

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/http2"

	"github.com/leasehold/leasehold/internal/coalesce"
)

// closedLogInterval is how often, at most, connections the guard closed
// with GOAWAY are logged.
const closedLogInterval = 10 * time.Second

// Guard holds the connection limits of one server.
type Guard struct {
	cfg     Config
	files   fileLimits
	log     *slog.Logger
	metrics *metrics

	open     atomic.Int64 // accepted connections not yet closed
	refusals summary
	closings summary
	shutdown shutdown
}

// New raises the process's soft descriptor limit to the hard one, derives
// the connection limit from it, registers the guard's metrics on reg and
// logs the limits it settled on.
func New(cfg Config, reg prometheus.Registerer, log *slog.Logger) (*Guard, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("connection limits: %w", err)
	}
	soft, hard, err := raiseFileLimit()
	if err != nil {
		if soft == 0 {
			return nil, err
		}
		log.Warn("keeping the soft descriptor limit", "err", err)
	}
	files, clamped, err := shareFiles(soft, cfg.ReservedFiles, cfg.MaxConnections)
	if err != nil {
		return nil, fmt.Errorf("connection limits: %w", err)
	}
	files.hard = hard
	if clamped {
		log.Warn("--max-connections lowered to what the descriptor limit allows",
			"asked", cfg.MaxConnections, "limit", files.connections, "RLIMIT_NOFILE", soft, "reserved", files.reserved)
	}
	g := &Guard{
		cfg:      cfg,
		files:    files,
		log:      log,
		refusals: summary{every: refusalLogInterval},
		closings: summary{every: closedLogInterval},
	}
	g.metrics = newMetrics(reg, func() float64 { return float64(g.open.Load()) }, files.connections)
	log.Info("connection limits", "maxConnections", files.connections, "RLIMIT_NOFILE", soft, "hardLimit", hard,
		"reservedFiles", files.reserved, "idleTimeout", cfg.IdleTimeout.String(), "readHeaderTimeout", cfg.ReadHeaderTimeout.String(),
		"http2MaxStreamsPerConnection", cfg.HTTP2MaxStreamsPerConnection, "http2MaxResetsPerSecond", cfg.HTTP2MaxResetsPerSecond, "goawayChance", cfg.GoawayChance)
	return g, nil
}

// Limit is how many client connections may be open at once.
func (g *Guard) Limit() int { return g.files.connections }

// Listener wraps the server's TCP listener: connections beyond the limit
// are closed at accept, and the rest have their writes coalesced
// (coalesce.Conn).
func (g *Guard) Listener(ln net.Listener) net.Listener {
	return coalesce.Listener{Listener: limitListener{Listener: ln, g: g}}
}

// Server builds the HTTPS server for handler with the guard's timeouts and
// HTTP/2 limits. Serve it with ServeTLS on g.Listener.
func (g *Guard) Server(handler http.Handler, tlsConfig *tls.Config) (*http.Server, error) {
	srv := &http.Server{
		Handler:   withGoaway(handler, g.cfg.GoawayChance),
		TLSConfig: tlsConfig,
		// net/http also bounds the TLS handshake by ReadHeaderTimeout.
		ReadHeaderTimeout: g.cfg.ReadHeaderTimeout,
		IdleTimeout:       g.cfg.IdleTimeout,
		// The HPACK tables keep HTTP/2's 4 KiB default. x/net evicts an
		// entry by copying the rest of the table down, so a larger decoder
		// table lets a client whose headers churn through it (many objects
		// over one connection) cost the server more per request.
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams: g.cfg.HTTP2MaxStreamsPerConnection,
			SendPingTimeout:      g.cfg.HTTP2ReadIdleTimeout,
			PingTimeout:          g.cfg.HTTP2PingTimeout,
			// A client that stops reading for as long as an unanswered
			// health check takes is gone as surely.
			WriteByteTimeout: g.cfg.HTTP2ReadIdleTimeout + g.cfg.HTTP2PingTimeout,
			CountError:       func(errType string) { g.metrics.h2Error.WithLabelValues(errType).Inc() },
		},
		// Per-connection failures (handshakes cut short, timeouts) are the
		// normal lot of a public port: debug level, not one line each.
		ErrorLog: log.New(serverErrorLog{g.log}, "", 0),
	}
	// x/net's server, not net/http's bundled copy, serves HTTP/2 because
	// only it serves a net.Conn of ours (ServeConn): the guard must see the
	// decrypted frames. ConfigureServer still ties one to srv (srv.HTTP2,
	// ALPN); the one that serves is tied to srv's graceful Shutdown through
	// shutdown.go, because x/net's own misses connections that start
	// serving during it.
	//lint:ignore SA1019 net/http offers no way to serve HTTP/2 on a wrapped connection
	if err := http2.ConfigureServer(srv, &http2.Server{}); err != nil {
		return nil, fmt.Errorf("configuring HTTP/2: %w", err)
	}
	//lint:ignore SA1019 see above
	h2 := &http2.Server{}
	if err := g.shutdown.configure(srv, h2, g.open.Load); err != nil {
		return nil, fmt.Errorf("configuring HTTP/2 shutdown: %w", err)
	}
	srv.TLSNextProto[http2.NextProtoTLS] = func(hs *http.Server, c *tls.Conn, h http.Handler) {
		// net/http hands over its per-connection context through the
		// handler, as it does to its own HTTP/2 server.
		ctx := context.Background()
		if bc, ok := h.(interface{ BaseContext() context.Context }); ok {
			ctx = bc.BaseContext()
		}
		//lint:ignore SA1019 see above
		h2.ServeConn(g.newH2Conn(c), &http2.ServeConnOpts{Context: ctx, Handler: h, BaseConfig: hs})
	}
	return srv, nil
}

// noteClosed counts a connection the guard answered with GOAWAY and logs a
// summary line at most every closedLogInterval.
func (g *Guard) noteClosed(reason string, remote net.Addr) {
	g.metrics.closed.WithLabelValues(reason).Inc()
	if n, due := g.closings.note(time.Now()); due {
		g.log.Warn("closing HTTP/2 connections with GOAWAY", "reason", reason, "remote", remote.String(),
			"connections", n, "every", closedLogInterval.String())
	}
}

// serverErrorLog takes net/http's error log lines to the server's logger:
// failing to accept (descriptors exhausted despite the limit) as errors,
// everything else, which is about one connection, at debug level.
type serverErrorLog struct{ log *slog.Logger }

func (w serverErrorLog) Write(p []byte) (int, error) {
	msg := string(bytes.TrimRight(p, "\n"))
	level := slog.LevelDebug
	if bytes.HasPrefix(p, []byte("http: Accept error")) {
		level = slog.LevelError
	}
	w.log.Log(context.Background(), level, msg, "component", "http")
	return len(p), nil
}
