package robustness

import (
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// proxy is a TCP proxy between one leasehold replica and one etcd member,
// which the partition fault cuts and restores (partition_test.go). It
// forwards each accepted connection to a new connection to the member,
// with one io.Copy per direction, and tracks the pairs so that a cut can
// reach the connections already open.
//
// Invariants: flow is a closed channel exactly while the link is not
// blackholed, so a forwarding write waits on it only during a blackhole;
// every goroutine (the accept loop and two per connection) is counted in
// wg, and close ends them all and waits for them.
type proxy struct {
	ln     net.Listener
	target string // the member's host:port

	mu     sync.Mutex
	mode   linkMode
	flow   chan struct{}
	conns  map[*proxyConn]struct{}
	closed bool
	wg     sync.WaitGroup
	// forwarded counts the bytes sent on toward the member, so a test
	// can tell which proxy the replica's connection uses.
	forwarded atomic.Int64
}

// linkMode is what a proxy does with connections.
type linkMode int

const (
	// linkUp forwards.
	linkUp linkMode = iota
	// linkDropped resets the connections that were open and every new
	// one as soon as it is accepted: the replica sees its connections
	// reset and no member it can reach.
	linkDropped
	// linkBlackholed keeps connections (and accepts new ones) but
	// forwards nothing in either direction until restored, as a network
	// partition does; what was held is then delivered, as TCP
	// retransmission would after a partition heals. Only the replica's
	// own timeouts and keepalives can tell.
	linkBlackholed
)

// proxyConn is one forwarded connection: the replica's end and the
// member's.
type proxyConn struct {
	client, upstream net.Conn
	done             chan struct{} // closed by teardown
	once             sync.Once
}

// startProxy listens on a free port of 127.0.0.1 and forwards to the
// member at endpoint (an http:// client URL) until the test ends.
func startProxy(t *testing.T, endpoint string) *proxy {
	t.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatalf("etcd endpoint %q: %v", endpoint, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listener: %v", err)
	}
	flow := make(chan struct{})
	close(flow)
	p := &proxy{ln: ln, target: u.Host, flow: flow, conns: map[*proxyConn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

// endpoint is the proxy's client URL, which the replica is given instead
// of the member's.
func (p *proxy) endpoint() string { return "http://" + p.ln.Addr().String() }

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		switch {
		case p.closed:
			p.mu.Unlock()
			_ = c.Close()
			return
		case p.mode == linkDropped:
			p.mu.Unlock()
			reset(c)
			continue
		}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.forward(c)
	}
}

// forward connects c to the member and copies both ways until either
// side ends or a cut or close tears the pair down.
func (p *proxy) forward(c net.Conn) {
	defer p.wg.Done()
	up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		reset(c) // the member is down: as if the replica had dialed it
		return
	}
	pc := &proxyConn{client: c, upstream: up, done: make(chan struct{})}
	p.mu.Lock()
	if p.closed || p.mode == linkDropped {
		p.mu.Unlock()
		pc.teardown()
		return
	}
	p.conns[pc] = struct{}{}
	p.wg.Add(2)
	p.mu.Unlock()
	copyHalf := func(dst, src net.Conn) {
		defer p.wg.Done()
		_, _ = io.Copy(gatedWriter{p: p, pc: pc, dst: dst}, src)
		pc.teardown()
		p.mu.Lock()
		delete(p.conns, pc)
		p.mu.Unlock()
	}
	go copyHalf(up, c)
	go copyHalf(c, up)
}

// gatedWriter writes to dst whenever the link is not blackholed.
type gatedWriter struct {
	p   *proxy
	pc  *proxyConn
	dst net.Conn
}

func (w gatedWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	flow := w.p.flow
	w.p.mu.Unlock()
	select {
	case <-flow:
	case <-w.pc.done:
		return 0, net.ErrClosed
	}
	n, err := w.dst.Write(b)
	if w.dst == w.pc.upstream {
		w.p.forwarded.Add(int64(n))
	}
	return n, err
}

// teardown resets both ends (once); the copies then end.
func (pc *proxyConn) teardown() {
	pc.once.Do(func() {
		close(pc.done)
		reset(pc.client)
		reset(pc.upstream)
	})
}

// reset closes c with an RST rather than a FIN, as a connection torn by
// the network is seen.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// cut drops or blackholes the link (see linkMode).
func (p *proxy) cut(mode linkMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = mode
	switch mode {
	case linkDropped:
		for pc := range p.conns {
			pc.teardown()
		}
	case linkBlackholed:
		p.flow = make(chan struct{})
	}
}

// restore forwards again; held data flows on.
func (p *proxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode == linkBlackholed {
		close(p.flow)
	}
	p.mode = linkUp
}

// close stops accepting, resets every connection and waits for every
// goroutine. It is the test's cleanup, after the replica stopped.
func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	_ = p.ln.Close() // serve's Accept then fails and it returns
	for pc := range p.conns {
		pc.teardown()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
