package connguard

import (
	"fmt"
	"time"
)

// Defaults of Config, also the flags' documented defaults.
const (
	// DefaultIdleTimeout is kube-apiserver's (and net/http's
	// DefaultTransport's keep-alive) 90 seconds.
	DefaultIdleTimeout = 90 * time.Second
	// DefaultReadHeaderTimeout bounds the TLS handshake and a request's
	// headers, as kube-apiserver's 32 s ReadHeaderTimeout does.
	DefaultReadHeaderTimeout = 30 * time.Second
	// DefaultHTTP2MaxStreamsPerConnection lets one connection carry many
	// clients' requests (as bench shares them) without queueing them.
	DefaultHTTP2MaxStreamsPerConnection = 2000
	// DefaultHTTP2MaxResetsPerSecond is far above what a client cancelling
	// requests and watches does, and far below a flood (which sends tens
	// of thousands per second).
	DefaultHTTP2MaxResetsPerSecond = 100
	// DefaultHTTP2ReadIdleTimeout and DefaultHTTP2PingTimeout are
	// client-go's own health-check settings, applied by the server.
	DefaultHTTP2ReadIdleTimeout = 30 * time.Second
	DefaultHTTP2PingTimeout     = 15 * time.Second
)

// resetBurstSeconds is how many seconds' worth of resets a connection may
// send at once: a client closing a few hundred watches together is not a
// flood, while each burst a flooder gets costs the server that many
// requests' work.
const resetBurstSeconds = 2

// Config is what the server's flags say about connections. Zero fields take
// the defaults above; MaxConnections and ReservedFiles zero are derived
// from RLIMIT_NOFILE (see fileLimits).
type Config struct {
	// MaxConnections caps open client connections (--max-connections). It
	// is lowered to what RLIMIT_NOFILE minus ReservedFiles allows.
	MaxConnections int
	// ReservedFiles is how many descriptors are kept from clients for the
	// store and the server's own files (--reserved-file-descriptors).
	ReservedFiles int
	// IdleTimeout closes a connection with no request in flight
	// (--idle-connection-timeout).
	IdleTimeout time.Duration
	// ReadHeaderTimeout bounds the TLS handshake, HTTP/1.1 request headers,
	// the HTTP/2 preface and each HTTP/2 header block (--read-header-timeout).
	ReadHeaderTimeout time.Duration
	// HTTP2MaxStreamsPerConnection is kube-apiserver's
	// --http2-max-streams-per-connection.
	HTTP2MaxStreamsPerConnection int
	// HTTP2MaxResetsPerSecond is the RST_STREAM rate past which a connection
	// gets GOAWAY (--http2-max-resets-per-second).
	HTTP2MaxResetsPerSecond int
	// HTTP2ReadIdleTimeout is how long an HTTP/2 connection may send nothing
	// before it is pinged (--http2-read-idle-timeout); HTTP2PingTimeout is
	// how long the ping may go unanswered (--http2-ping-timeout).
	HTTP2ReadIdleTimeout time.Duration
	HTTP2PingTimeout     time.Duration
	// GoawayChance is kube-apiserver's --goaway-chance: the probability
	// that an HTTP/2 request's connection is sent GOAWAY after it, so that
	// clients behind a load balancer spread over replicas (goaway.go). 0
	// (the default) never does; at most MaxGoawayChance.
	GoawayChance float64
}

func (c Config) withDefaults() (Config, error) {
	for name, v := range map[string]int64{
		"max connections": int64(c.MaxConnections), "reserved file descriptors": int64(c.ReservedFiles),
		"idle timeout": int64(c.IdleTimeout), "read header timeout": int64(c.ReadHeaderTimeout),
		"HTTP/2 streams per connection": int64(c.HTTP2MaxStreamsPerConnection),
		"HTTP/2 resets per second":      int64(c.HTTP2MaxResetsPerSecond),
		"HTTP/2 read idle timeout":      int64(c.HTTP2ReadIdleTimeout), "HTTP/2 ping timeout": int64(c.HTTP2PingTimeout),
	} {
		if v < 0 {
			return c, fmt.Errorf("%s must not be negative, got %d", name, v)
		}
	}
	if err := checkGoawayChance(c.GoawayChance); err != nil {
		return c, err
	}
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.IdleTimeout, DefaultIdleTimeout)
	def(&c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&c.HTTP2ReadIdleTimeout, DefaultHTTP2ReadIdleTimeout)
	def(&c.HTTP2PingTimeout, DefaultHTTP2PingTimeout)
	if c.HTTP2MaxStreamsPerConnection == 0 {
		c.HTTP2MaxStreamsPerConnection = DefaultHTTP2MaxStreamsPerConnection
	}
	if c.HTTP2MaxResetsPerSecond == 0 {
		c.HTTP2MaxResetsPerSecond = DefaultHTTP2MaxResetsPerSecond
	}
	return c, nil
}
