package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"

	"github.com/leasehold/leasehold/internal/coalesce"
)

// ClientFactory returns the clientset worker i (0 <= i < Config.Clients)
// uses. Workers may share clientsets; a clientset is safe for concurrent use.
type ClientFactory func(worker int) (kubernetes.Interface, error)

// ContentType values accepted by Clients.
const (
	ContentTypeJSON     = "json"
	ContentTypeProtobuf = "protobuf"
)

// Client kinds accepted by NewClientsOfKind: how renewals are sent.
const (
	// ClientTyped renews through client-go's typed clientset, as kubelets do.
	ClientTyped = "typed"
	// ClientLean renews with hand-built requests over HTTP/2, skipping
	// client-go's per-request machinery so that less of a shared machine's
	// CPU goes to the load generator (see lean.go and leantransport.go).
	ClientLean = "lean"
)

// Clients is a fixed set of clientsets, each on its own HTTP transport and
// so its own connection: client-go otherwise shares one transport (and one
// HTTP/2 connection) among every client built from equal TLS settings, which
// would funnel the whole benchmark through one TCP stream and one server-side
// reader. Close closes every connection they dialed.
//
// Node clients (NewNodeClients) send every lease's requests as the node the
// lease is named after, with that node's bearer token, over connections that
// present no client certificate (a server identifies a caller by its
// certificate before looking at a token); what no node may do (namespaces,
// lists) goes through one more connection with the kubeconfig's own
// credentials.
type Clients struct {
	sets []kubernetes.Interface
	// lean holds, for lean clients, each connection's lean client (sharing
	// the transport of sets[i]); nil for typed clients.
	lean []*leanConn
	// admin and tokens are set for node clients only.
	admin  kubernetes.Interface
	tokens *NodeTokens
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
}

// NewClients builds connections typed clientsets from base (not modified)
// speaking contentType. Client-side rate limiting is switched off so that
// only the server limits throughput.
func NewClients(base *rest.Config, contentType string, connections int) (*Clients, error) {
	return NewClientsOfKind(base, ClientTyped, contentType, connections)
}

// NewClientsOfKind is NewClients with the kind of client that renews:
// ClientTyped or ClientLean. Lean clients still use a typed clientset on the
// same connection for everything but renewals (setup, lists).
func NewClientsOfKind(base *rest.Config, kind, contentType string, connections int) (*Clients, error) {
	return newClients(base, kind, contentType, connections, nil)
}

// NewNodeClients is NewClientsOfKind for clients that renew every lease as
// its node, with the node's token from tokens: the connections keep base's
// server and CA but none of its credentials. base's credentials serve only
// for what nodes may not do: creating the namespace, listing its leases.
func NewNodeClients(base *rest.Config, kind, contentType string, connections int, tokens *NodeTokens) (*Clients, error) {
	if tokens == nil {
		return nil, fmt.Errorf("node clients need node tokens")
	}
	return newClients(base, kind, contentType, connections, tokens)
}

func newClients(base *rest.Config, kind, contentType string, connections int, tokens *NodeTokens) (*Clients, error) {
	if connections <= 0 {
		return nil, fmt.Errorf("connections must be positive, got %d", connections)
	}
	if kind != ClientTyped && kind != ClientLean {
		return nil, fmt.Errorf("client kind %q: want %q or %q", kind, ClientTyped, ClientLean)
	}
	var urls *leaseURLs
	if kind == ClientLean {
		var err error
		if urls, err = newLeaseURLs(base); err != nil {
			return nil, err
		}
	}
	c := &Clients{conns: map[net.Conn]struct{}{}, tokens: tokens}
	renewing := base
	if tokens != nil {
		cfg, err := c.connConfig(base, contentType)
		if err != nil {
			return nil, err
		}
		if c.admin, err = kubernetes.NewForConfig(cfg); err != nil {
			return nil, fmt.Errorf("building the admin clientset: %w", err)
		}
		renewing = rest.AnonymousClientConfig(base)
	}
	for i := range connections {
		cfg, err := c.connConfig(renewing, contentType)
		if err != nil {
			return nil, err
		}
		if tokens != nil {
			cfg.WrapTransport = transport.Wrappers(cfg.WrapTransport, withNodeAuthorization)
		}
		if kind == ClientTyped {
			set, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return nil, fmt.Errorf("building clientset %d: %w", i, err)
			}
			c.sets = append(c.sets, set)
			continue
		}
		set, conn, err := c.newLeanPair(cfg, urls)
		if err != nil {
			return nil, fmt.Errorf("building lean client %d: %w", i, err)
		}
		c.sets = append(c.sets, set)
		c.lean = append(c.lean, conn)
	}
	return c, nil
}

// connConfig is the config of one connection of c to the server base
// names, speaking contentType. Client-side rate limiting is off so that
// only the server limits throughput.
func (c *Clients) connConfig(base *rest.Config, contentType string) (*rest.Config, error) {
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
	cfg.Dial = c.trackingDial(newDialer())
	cfg.WrapTransport = noHeaderIndexing
	return cfg, nil
}

// newLeanPair builds one connection's HTTP client from cfg (leantransport.go)
// and both clients on it: the typed clientset and the lean one.
func (c *Clients) newLeanPair(cfg *rest.Config, urls *leaseURLs) (kubernetes.Interface, *leanConn, error) {
	// The transport sets the User-Agent only when the config names one; left
	// empty, setup's creates would go out as Go-http-client and the lean
	// renewals as the binary's name: two field managers on every lease,
	// which takes the server off its single-manager renewal fast path and
	// measures something no kubelet does.
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	httpClient, err := c.leanHTTPClient(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("building HTTP client: %w", err)
	}
	set, err := kubernetes.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, nil, fmt.Errorf("building clientset: %w", err)
	}
	conn, err := newLeanConn(cfg, httpClient, urls)
	if err != nil {
		return nil, nil, err
	}
	return set, conn, nil
}

// encoderHeaderTable is the HPACK dynamic table, in bytes, that the
// benchmark's connections encode request headers with: one byte, so that no
// header is ever indexed (zero would mean HTTP/2's 4 KiB default). A
// connection carries the renewals of many leases, each with its own :path,
// and with 100,000 leases no table holds a connection's paths, so every
// request would add one entry and evict another. x/net's hpack evicts by
// copying the whole table down, so each request cost time in proportion to
// the table's entries, on the client's encoder and again on the server's
// decoder: with the 256 KiB table used before, 15% of the load generator's
// CPU and 8.5% of the server's in `bench rate --nodes 100000 --client lean`.
// A kubelet renews one path per connection and never sees this churn, so
// the generator avoids it rather than spend the shared machine's CPU on it;
// literal headers cost a few hundred bytes of loopback traffic instead.
const encoderHeaderTable = 1

// noHeaderIndexing makes the HTTP/2 connections of rt encode with
// encoderHeaderTable. client-go hands WrapTransport its cache's wrapper
// around an *http.Transport that has not connected yet (the tracking dial
// gives every Clients connection a transport of its own), and
// golang.org/x/net/http2 reads that transport's HTTP2 settings for every new
// connection.
func noHeaderIndexing(rt http.RoundTripper) http.RoundTripper {
	inner := rt
	for {
		if t, ok := inner.(*http.Transport); ok {
			h2 := &http.HTTP2Config{}
			if t.HTTP2 != nil {
				*h2 = *t.HTTP2
			}
			h2.MaxEncoderHeaderTableSize = encoderHeaderTable
			t.HTTP2 = h2
			return rt
		}
		w, ok := inner.(utilnet.RoundTripperWrapper)
		if !ok {
			return rt
		}
		inner = w.WrappedRoundTripper()
	}
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

// newDialer is the TCP dialer of every benchmark connection (net/http's
// defaults for its own transport).
func newDialer() *net.Dialer {
	return &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
}

func (c *Clients) trackingDial(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		raw, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		// The generator's own CPU competes with the server's on one machine:
		// gathering each connection's HTTP/2 flushes (see package coalesce)
		// halves its write system calls.
		return c.track(coalesce.NewConn(raw)), nil
	}
}

// track remembers conn for Close; conn forgets itself when closed.
func (c *Clients) track(conn net.Conn) net.Conn {
	c.mu.Lock()
	c.conns[conn] = struct{}{}
	c.mu.Unlock()
	return &trackedConn{Conn: conn, owner: c}
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

// Factory hands worker i clientset i mod the number of connections. For
// lean clients that clientset also renews through the lean client on its
// connection; for node clients it renews as nodes (see Clients).
func (c *Clients) Factory() ClientFactory {
	return func(worker int) (kubernetes.Interface, error) {
		if worker < 0 {
			return nil, fmt.Errorf("worker %d: must not be negative", worker)
		}
		i := worker % len(c.sets)
		w := &workerClientset{Interface: c.sets[i], admin: c.admin, tokens: c.tokens}
		if c.lean != nil {
			w.lean = c.lean[i]
		}
		return w, nil
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
