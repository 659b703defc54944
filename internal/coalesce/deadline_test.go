package coalesce

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// A Write that waits for a writer stuck on a peer that does not read ends
// at the deadline set before it, with a timeout.
func TestConnWriteDeadlineEndsAWaitingWrite(t *testing.T) {
	c, _ := tcpPair(t) // the peer never reads
	if err := c.SetWriteDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	done := writeUntilError(c)
	wantDeadlineError(t, done)
}

// deadlineCounter counts the write deadlines that reach the connection.
type deadlineCounter struct {
	net.Conn
	set atomic.Int64
}

func (d *deadlineCounter) SetWriteDeadline(t time.Time) error {
	d.set.Add(1)
	return d.Conn.SetWriteDeadline(t)
}

// HTTP/2's per-flush deadline (set before a Write, cleared after) stays in
// the Conn while its Writes do not wait, and the bytes still arrive.
func TestConnKeepsDeadlinesOfWritesThatDoNotWait(t *testing.T) {
	a, b := net.Pipe()
	under := &deadlineCounter{Conn: a}
	c := NewConn(under)
	read := make(chan int64, 1)
	go func() {
		n, _ := io.Copy(io.Discard, b)
		read <- n
	}()
	for range 100 {
		if err := c.SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
		if err := c.SetWriteDeadline(time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := under.set.Load(); n != 0 {
		t.Errorf("%d write deadlines reached the connection, want 0", n)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	if n := <-read; n != 100*100 {
		t.Errorf("the peer read %d bytes, want %d", n, 100*100)
	}
}

// BenchmarkWriteDeadlinePair is what x/net's HTTP/2 WriteByteTimeout adds
// to every flush: a write deadline before the Write and none after.
func BenchmarkWriteDeadlinePair(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	go func() {
		peer, err := ln.Accept()
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, peer)
		_ = peer.Close()
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	c := NewConn(raw)
	defer func() { _ = c.Close() }()
	b.ReportAllocs()
	for b.Loop() {
		_ = c.SetWriteDeadline(time.Now().Add(time.Minute))
		_ = c.SetWriteDeadline(time.Time{})
	}
}

// A deadline set while a Write already waits for a stuck writer reaches the
// socket at once and ends that Write.
func TestConnDeadlineSetWhileAWriteWaits(t *testing.T) {
	c, _ := tcpPair(t) // the peer never reads
	done := writeUntilError(c)
	// Wait until a Write has waited for the writer for 300 ms on end: the
	// writer is stuck on the socket, and the Write will not wake by itself.
	start, stuckSince := time.Now(), time.Now()
	for time.Since(stuckSince) < 300*time.Millisecond {
		if time.Since(start) > 20*time.Second {
			t.Fatal("no Write waited for a stuck writer within 20 s")
		}
		time.Sleep(time.Millisecond)
		c.mu.Lock()
		waiting := c.waiting > 0
		c.mu.Unlock()
		if !waiting {
			stuckSince = time.Now()
		}
	}
	if err := c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	wantDeadlineError(t, done)
}

// writeUntilError writes to c until a Write fails, and sends that error.
func writeUntilError(c *Conn) <-chan error {
	chunk := make([]byte, 64<<10)
	done := make(chan error, 1)
	go func() {
		for {
			if _, err := c.Write(chunk); err != nil {
				done <- err
				return
			}
		}
	}()
	return done
}

// wantDeadlineError waits for the Write that done reports to fail with a
// deadline error.
func wantDeadlineError(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Write failed with %v, want a deadline error", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Write still blocked 20 s after its deadline")
	}
}
