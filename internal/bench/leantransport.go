//lint:file-ignore SA1019 net/http speaks HTTP/2 only over a *tls.Conn, so the lean client uses x/net's HTTP/2 transport (see below)

package bench

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/http2"
	"k8s.io/client-go/rest"

	"github.com/leasehold/leasehold/internal/coalesce"
)

// The lean client's connections encrypt in the write coalescer's goroutine,
// not in the goroutine of each request. golang.org/x/net/http2's client
// writes a request's frames from a goroutine it starts for that request;
// when TLS sits above the coalescer (as net/http's transport puts it), that
// goroutine runs AES-GCM, whose call depth outgrows the goroutine's initial
// stack, so every request copied its stack once: 11% of the generator's CPU
// profile under `bench max --client lean` (runtime.newstack under
// gcmAesEnc). With the coalescer above TLS, the request's goroutine only
// copies frames into the coalescer's buffer, and its long-lived writer
// encrypts them, several frames to a TLS record. net/http's transport
// speaks HTTP/2 only over a *tls.Conn, so the lean client runs x/net's
// HTTP/2 transport directly; client-go still builds its TLS configuration
// and its authentication and User-Agent wrappers.

// Client-go's health checks of an HTTP/2 connection (its transport
// defaults, which the typed client's connections use).
const (
	h2ReadIdleTimeout = 30 * time.Second
	h2PingTimeout     = 15 * time.Second
)

// leanHTTPClient is cfg's HTTP client for a lean connection: cfg's TLS
// configuration, credentials and wrappers over one HTTP/2 connection whose
// writes are coalesced above TLS.
func (c *Clients) leanHTTPClient(cfg *rest.Config) (*http.Client, error) {
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("TLS configuration: %w", err)
	}
	if tlsConfig == nil {
		return nil, fmt.Errorf("the lean client speaks HTTP/2 over TLS only; %s is not https", cfg.Host)
	}
	dialer := newDialer()
	h2 := &http2.Transport{
		TLSClientConfig: tlsConfig,
		DialTLSContext: func(ctx context.Context, network, addr string, tc *tls.Config) (net.Conn, error) {
			return c.dialCoalescedTLS(ctx, dialer, network, addr, tc)
		},
		MaxEncoderHeaderTableSize: encoderHeaderTable,
		ReadIdleTimeout:           h2ReadIdleTimeout,
		PingTimeout:               h2PingTimeout,
	}
	rt, err := rest.HTTPWrappersForConfig(cfg, h2)
	if err != nil {
		return nil, fmt.Errorf("client wrappers: %w", err)
	}
	return &http.Client{Transport: rt, Timeout: cfg.Timeout}, nil
}

// dialCoalescedTLS dials addr, completes the TLS handshake and returns the
// TLS connection behind a coalescer, tracked for Close.
func (c *Clients) dialCoalescedTLS(ctx context.Context, d *net.Dialer, network, addr string, tc *tls.Config) (net.Conn, error) {
	raw, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tconn := tls.Client(raw, tc)
	if err := tconn.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("TLS handshake with %s, offering HTTP/2 only (the lean client speaks nothing else; --client typed speaks HTTP/1.1 too): %w", addr, err)
	}
	state := tconn.ConnectionState()
	if state.NegotiatedProtocol != http2.NextProtoTLS {
		_ = tconn.Close()
		return nil, fmt.Errorf("%s did not negotiate HTTP/2 (ALPN %q): the lean client speaks nothing else; --client typed speaks HTTP/1.1 too", addr, state.NegotiatedProtocol)
	}
	return c.track(&coalescedTLS{Conn: coalesce.NewConn(tconn), state: state}), nil
}

// coalescedTLS is a TLS connection behind a coalescer. x/net's transport
// learns the negotiated protocol and peer certificates through
// ConnectionState, which the coalescer does not pass on by itself.
type coalescedTLS struct {
	*coalesce.Conn
	state tls.ConnectionState
}

func (c *coalescedTLS) ConnectionState() tls.ConnectionState { return c.state }
