package bench

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ClientFactory returns the clientset worker i (0 <= i < Config.Clients)
// uses. Workers may share clientsets; a clientset is safe for concurrent use.
type ClientFactory func(worker int) (kubernetes.Interface, error)

// ContentType values accepted by Clients.
const (
	ContentTypeJSON     = "json"
	ContentTypeProtobuf = "protobuf"
)

// Clients is a fixed set of clientsets, each on its own HTTP transport and
// so its own connection: client-go otherwise shares one transport (and one
// HTTP/2 connection) among every client built from equal TLS settings, which
// would funnel the whole benchmark through one TCP stream and one server-side
// reader. Close closes every connection they dialed.
type Clients struct {
	sets  []kubernetes.Interface
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// NewClients builds connections clientsets from base (not modified) speaking
// contentType. Client-side rate limiting is switched off so that only the
// server limits throughput.
func NewClients(base *rest.Config, contentType string, connections int) (*Clients, error) {
	if connections <= 0 {
		return nil, fmt.Errorf("connections must be positive, got %d", connections)
	}
	c := &Clients{conns: map[net.Conn]struct{}{}}
	for i := range connections {
		cfg := rest.CopyConfig(base)
		if err := setContentType(cfg, contentType); err != nil {
			return nil, err
		}
		cfg.QPS = -1
		cfg.Burst = 1 << 20
		cfg.RateLimiter = nil
		// A dial function of our own makes client-go treat the transport as
		// distinct (it keys its cache on the dialer) and lets Close reach
		// every connection.
		dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		cfg.Dial = c.trackingDial(dialer)
		set, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("building clientset %d: %w", i, err)
		}
		c.sets = append(c.sets, set)
	}
	return c, nil
}

// setContentType makes cfg send and prefer the named encoding.
func setContentType(cfg *rest.Config, contentType string) error {
	switch contentType {
	case ContentTypeJSON, "":
		cfg.ContentType = runtime.ContentTypeJSON
		cfg.AcceptContentTypes = runtime.ContentTypeJSON
	case ContentTypeProtobuf:
		cfg.ContentType = runtime.ContentTypeProtobuf
		cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	default:
		return fmt.Errorf("content type %q: want %q or %q", contentType, ContentTypeJSON, ContentTypeProtobuf)
	}
	return nil
}

func (c *Clients) trackingDial(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.conns[conn] = struct{}{}
		c.mu.Unlock()
		return &trackedConn{Conn: conn, owner: c}, nil
	}
}

// trackedConn forgets itself in its owner when closed.
type trackedConn struct {
	net.Conn
	owner *Clients
	once  sync.Once
}

func (t *trackedConn) Close() error {
	t.once.Do(func() {
		t.owner.mu.Lock()
		delete(t.owner.conns, t.Conn)
		t.owner.mu.Unlock()
	})
	return t.Conn.Close()
}

// Factory hands worker i clientset i mod the number of connections.
func (c *Clients) Factory() ClientFactory {
	return func(worker int) (kubernetes.Interface, error) {
		if worker < 0 {
			return nil, fmt.Errorf("worker %d: must not be negative", worker)
		}
		return c.sets[worker%len(c.sets)], nil
	}
}

// Close closes every connection the clientsets opened, which also ends the
// transports' per-connection goroutines. The clientsets redial if used again.
func (c *Clients) Close() {
	c.mu.Lock()
	conns := make([]net.Conn, 0, len(c.conns))
	for conn := range c.conns {
		conns = append(conns, conn)
	}
	clear(c.conns)
	c.mu.Unlock()
	for _, conn := range conns {
		_ = conn.Close()
	}
}
