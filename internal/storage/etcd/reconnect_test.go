package etcd

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/storage/etcd/etcdtest"
)

// While the cluster is unreachable (its endpoint resets every connection)
// the driver tries again at least every maxReconnectDelay plus jitter,
// so it answers again within about that once the cluster is back. With
// gRPC's default backoff (what clientv3 uses) one gap was 6.4 s within
// the 15 s, and they go on growing up to 120 s.
func TestReconnectAttemptsStayFrequent(t *testing.T) {
	if testing.Short() {
		t.Skip("a 15 s outage; not in -short")
	}
	g := startGate(t, hostOf(etcdtest.Start(t, etcdtest.Options{}).Endpoint))
	s := newTestStore(t, "http://"+g.ln.Addr().String(), "")
	if _, err := s.CurrentRevision(testContext(t)); err != nil {
		t.Fatal(err)
	}
	g.shut(true)
	start := time.Now()
	// Requests keep coming, as on a replica with clients: gRPC reconnects
	// a lost connection for them.
	for time.Since(start) < 15*time.Second {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, _ = s.CurrentRevision(ctx)
		cancel()
	}
	attempts := g.shut(false)
	back := time.Now()
	prev, longest := start, time.Duration(0)
	for _, a := range attempts {
		longest = max(longest, a.Sub(prev))
		prev = a
	}
	longest = max(longest, back.Sub(prev))
	if limit := maxReconnectDelay * 3 / 2; longest > limit {
		t.Errorf("during a 15 s outage, %d connection attempts, at most %v apart; want at most %v", len(attempts), longest.Round(time.Millisecond), limit)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*maxReconnectDelay)
	defer cancel()
	if _, err := s.CurrentRevision(ctx); err != nil {
		t.Fatalf("%v after the cluster came back: %v", time.Since(back).Round(time.Millisecond), err)
	}
	t.Logf("%d connection attempts in 15 s, at most %v apart; answered again %v after the cluster came back",
		len(attempts), longest.Round(time.Millisecond), time.Since(back).Round(time.Millisecond))
}

// gate is a TCP endpoint in front of an etcd member: it forwards each
// connection, or while shut resets every connection (those open and each
// new one as it is accepted) and notes when each new one came, or while
// held forwards nothing (connections stay open and new ones are accepted,
// as behind a network that drops packets) until released.
type gate struct {
	ln     net.Listener
	target string

	mu       sync.Mutex
	closed   bool
	shutNow  bool
	held     bool
	released *sync.Cond // on mu; broadcast when held ends or the gate closes
	attempts []time.Time
	conns    map[net.Conn]struct{}
	wg       sync.WaitGroup
}

func startGate(t *testing.T, target string) *gate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	g.released = sync.NewCond(&g.mu)
	g.wg.Go(g.serve)
	t.Cleanup(func() {
		g.mu.Lock()
		g.closed = true
		g.released.Broadcast()
		_ = ln.Close()
		for c := range g.conns {
			_ = c.Close()
		}
		g.mu.Unlock()
		g.wg.Wait()
	})
	return g
}

// shut shuts the gate or opens it; opening returns the attempts made
// while it was shut.
func (g *gate) shut(on bool) []time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shutNow = on
	if on {
		g.attempts = nil
		for c := range g.conns {
			resetConn(c)
		}
	}
	return g.attempts
}

// hold stops forwarding (on) or forwards again what was held (off).
func (g *gate) hold(on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = on
	if !on {
		g.released.Broadcast()
	}
}

// forward copies from src to dst, waiting while the gate is held.
func (g *gate) forward(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			g.mu.Lock()
			for g.held && !g.closed {
				g.released.Wait()
			}
			g.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (g *gate) serve() {
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		g.mu.Lock()
		if g.closed || g.shutNow {
			g.attempts = append(g.attempts, time.Now())
			g.mu.Unlock()
			resetConn(c)
			continue
		}
		up, err := net.DialTimeout("tcp", g.target, time.Second)
		if err != nil {
			g.mu.Unlock()
			resetConn(c)
			continue
		}
		g.conns[c], g.conns[up] = struct{}{}, struct{}{}
		for _, pair := range [][2]net.Conn{{c, up}, {up, c}} {
			g.wg.Go(func() {
				g.forward(pair[0], pair[1])
				g.mu.Lock()
				delete(g.conns, pair[0])
				delete(g.conns, pair[1])
				g.mu.Unlock()
				resetConn(pair[0])
				resetConn(pair[1])
			})
		}
		g.mu.Unlock()
	}
}

// resetConn closes c with an RST, as a connection cut by the network.
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
