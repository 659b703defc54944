package robustness

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The partition fault is only as real as its proxy: a cut must stop what
// goes through it, and a restore must let it through again.
func TestProxyCutsAndRestores(t *testing.T) {
	echo := startEcho(t)
	p := startProxy(t, "http://"+echo)

	held := dialProxy(t, p)
	roundTrip(t, held, "a")

	p.cut(linkBlackholed)
	send(t, held, "b")
	expectSilence(t, held)
	fresh := dialProxy(t, p) // accepted, and held too
	send(t, fresh, "c")
	expectSilence(t, fresh)
	p.restore()
	expectRead(t, held, "b")
	expectRead(t, fresh, "c")

	p.cut(linkDropped)
	for _, c := range []net.Conn{held, fresh} {
		if err := readErr(c); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a connection open when the link was dropped: read %v, want it reset", err)
		}
	}
	if c, err := net.DialTimeout("tcp", p.ln.Addr().String(), time.Second); err == nil {
		// The proxy resets the connection as it accepts it: the write may
		// already meet the reset, or else the read after it must.
		if _, err := c.Write([]byte("d")); err != nil {
			if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
				t.Fatalf("a connection made while the link was dropped: write %v, want it reset", err)
			}
		} else if err := readErr(c); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a connection made while the link was dropped: read %v, want it reset", err)
		}
		_ = c.Close()
	}
	p.restore()
	roundTrip(t, dialProxy(t, p), "e")
}

// startEcho runs a TCP server that sends back what it reads, until the
// test ends.
func startEcho(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { _, _ = io.Copy(c, c) })
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func dialProxy(t *testing.T, p *proxy) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.ln.Addr().String(), time.Second)
	if err != nil {
		t.Fatalf("dial the proxy: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func send(t *testing.T, c net.Conn, s string) {
	t.Helper()
	if _, err := c.Write([]byte(s)); err != nil {
		t.Fatalf("write %q: %v", s, err)
	}
}

func roundTrip(t *testing.T, c net.Conn, s string) {
	t.Helper()
	send(t, c, s)
	expectRead(t, c, s)
}

func expectRead(t *testing.T, c net.Conn, want string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, len(want))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != want {
		t.Fatalf("read %q, %v; want %q", buf, err, want)
	}
}

// expectSilence checks that nothing comes back for 300 ms.
func expectSilence(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	buf := make([]byte, 1)
	if n, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("through a blackholed link: read %q, %v; want nothing", buf[:n], err)
	}
}

// readErr reads one byte (within 5 s) and returns the error.
func readErr(c net.Conn) error {
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.Read(make([]byte, 1))
	return err
}
