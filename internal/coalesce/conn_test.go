package coalesce

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tcpPair returns both ends of a loopback TCP connection, the server end
// wrapped as the coalescing listener wraps it.
func tcpPair(t *testing.T) (*Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := Listener{ln}.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server := <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { _ = server.Close(); _ = peer.Close() })
	return server.(*Conn), peer
}

func TestConnKeepsEachWritersOrder(t *testing.T) {
	server, peer := tcpPair(t)
	const writers, each = 8, 2000
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				if _, err := fmt.Fprintf(server, "%d %d\n", g, i); err != nil {
					t.Errorf("write: %v", err)
					return
				}
			}
		})
	}
	read := make(chan error, 1)
	go func() {
		next := make([]int, writers)
		sc := bufio.NewScanner(peer)
		lines := 0
		for sc.Scan() {
			g, i, ok := strings.Cut(sc.Text(), " ")
			gi, err1 := strconv.Atoi(g)
			ii, err2 := strconv.Atoi(i)
			if !ok || err1 != nil || err2 != nil || gi < 0 || gi >= writers {
				read <- fmt.Errorf("torn line %q", sc.Text())
				return
			}
			if ii != next[gi] {
				read <- fmt.Errorf("writer %d: got message %d, want %d", gi, ii, next[gi])
				return
			}
			next[gi]++
			lines++
		}
		if lines != writers*each {
			read <- fmt.Errorf("read %d lines, want %d (scan error %v)", lines, writers*each, sc.Err())
			return
		}
		read <- nil
	}()
	wg.Wait()
	if err := server.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := <-read; err != nil {
		t.Fatal(err)
	}
}

func TestConnCloseSendsWhatIsPending(t *testing.T) {
	server, peer := tcpPair(t)
	want := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB, four times the pending limit
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(peer)
		got <- b
	}()
	for off := 0; off < len(want); off += 16 << 10 {
		if _, err := server.Write(want[off : off+16<<10]); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	if err := server.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("peer read %d bytes, want the %d written", len(b), len(want))
	}
	if _, err := server.Write([]byte("late")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("write after close: got %v, want net.ErrClosed", err)
	}
}

// gatedConn is the write side of a net.Pipe whose Writes are recorded and
// held until the test opens the gate, so that a test can tell exactly which
// bytes the writer sent in which call.
type gatedConn struct {
	net.Conn
	entered chan struct{} // receives once per Write call, on entry
	gate    chan struct{} // closed to let Writes through

	mu     sync.Mutex
	writes []string
}

func newGatedConn(t *testing.T) *gatedConn {
	a, b := net.Pipe()
	go func() { _, _ = io.Copy(io.Discard, b) }()
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	return &gatedConn{Conn: a, entered: make(chan struct{}, 16), gate: make(chan struct{})}
}

func (g *gatedConn) Write(p []byte) (int, error) {
	g.mu.Lock()
	g.writes = append(g.writes, string(p))
	g.mu.Unlock()
	g.entered <- struct{}{}
	<-g.gate
	return g.Conn.Write(p)
}

func (g *gatedConn) recorded() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.writes...)
}

func TestConnGathersWritesMadeDuringASend(t *testing.T) {
	g := newGatedConn(t)
	c := NewConn(g)
	if _, err := c.Write([]byte("headers;")); err != nil {
		t.Fatal(err)
	}
	<-g.entered // the writer is inside the first send
	for _, s := range []string{"data;", "headers2;", "data2;"} {
		if _, err := c.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	close(g.gate)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{"headers;", "data;headers2;data2;"}
	if got := g.recorded(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("underlying writes %q, want %q", got, want)
	}
}

func TestConnWriteBlocksPastTheLimit(t *testing.T) {
	g := newGatedConn(t)
	c := NewConn(g)
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	<-g.entered
	if _, err := c.Write(make([]byte, maxPendingWrite)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Write([]byte("over the limit"))
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Write past the pending limit returned (%v) while the writer was stuck", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(g.gate)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Write after the writer drained: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Write still blocked after the writer drained")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestConnWriteErrorIsSticky(t *testing.T) {
	a, b := net.Pipe()
	c := NewConn(a)
	defer func() { _ = c.Close() }()
	_ = b.Close()
	deadline := time.Now().Add(10 * time.Second)
	var err error
	for err == nil && time.Now().Before(deadline) {
		_, err = c.Write([]byte("into a closed pipe"))
		time.Sleep(time.Millisecond)
	}
	if !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("got %v, want the pipe's error", err)
	}
	if _, again := c.Write([]byte("again")); !errors.Is(again, io.ErrClosedPipe) {
		t.Fatalf("second write after the failure: got %v, want the same error", again)
	}
}

func TestConnCloseGivesUpOnAPeerThatDoesNotRead(t *testing.T) {
	a, b := net.Pipe() // synchronous: nothing is sent until b reads, and b never does
	defer func() { _ = b.Close() }()
	c := NewConn(a)
	if _, err := c.Write([]byte("never read")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > closeFlushTimeout+5*time.Second {
		t.Fatalf("Close took %v with a stuck peer", took)
	}
}

// countingReader reads at most 7000 bytes a call (a slow peer, so that
// writers hit the pending limit) and counts what it read.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	if len(p) > 7000 {
		p = p[:7000]
	}
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TestConnDeliversEverythingWithoutClose has 16 goroutines write bursts of
// mixed sizes (some past the pending limit) to a slow peer, then checks that
// every byte arrives while the connection stays open: a lost wake-up of the
// writer would leave bytes pending until Close.
func TestConnDeliversEverythingWithoutClose(t *testing.T) {
	server, peer := tcpPair(t)
	var sent, received atomic.Int64
	go func() { _, _ = io.Copy(io.Discard, countingReader{peer, &received}) }()
	var wg sync.WaitGroup
	stop := time.Now().Add(time.Second)
	for g := range 16 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			buf := make([]byte, maxPendingWrite+maxPendingWrite/4)
			for time.Now().Before(stop) {
				n := r.IntN(40)
				if r.IntN(50) == 0 {
					n = r.IntN(len(buf))
				}
				if _, err := server.Write(buf[:n]); err != nil {
					t.Errorf("write: %v", err)
					return
				}
				sent.Add(int64(n))
				if r.IntN(4) == 0 {
					time.Sleep(time.Duration(r.IntN(50)) * time.Microsecond)
				}
			}
		})
	}
	writersDone := make(chan struct{})
	go func() { wg.Wait(); close(writersDone) }()
	select {
	case <-writersDone:
	case <-time.After(15 * time.Second):
		// A writer that stopped sending leaves Write blocked at the limit;
		// Close unblocks it.
		t.Errorf("writers still blocked 14 s after they stopped starting writes")
		_ = server.Close()
		<-writersDone
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for received.Load() != sent.Load() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if r, s := received.Load(), sent.Load(); r != s {
		t.Fatalf("peer received %d of the %d bytes written, with the connection open", r, s)
	}
}
