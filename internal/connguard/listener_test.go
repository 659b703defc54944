package connguard

import (
	"errors"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestListenerRefusesBeyondLimit: with two connections open, a third is
// closed at once and counted; closing one makes room again.
func TestListenerRefusesBeyondLimit(t *testing.T) {
	s := startGuarded(t, Config{MaxConnections: 2}, http.NotFoundHandler())
	if s.g.Limit() != 2 {
		t.Fatalf("limit %d, want 2", s.g.Limit())
	}
	dial := func() net.Conn {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	// open reports whether the server keeps c open for a while.
	open := func(c net.Conn) bool {
		_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		return errors.As(err, &ne) && ne.Timeout()
	}
	first, second := dial(), dial()
	if !open(first) || !open(second) {
		t.Fatal("connections within the limit were closed")
	}
	if open(dial()) {
		t.Fatal("a third connection beyond the limit of 2 stayed open")
	}
	if got := s.counter(t, s.g.metrics.refused); got != 1 {
		t.Errorf("refused = %v, want 1", got)
	}
	_ = first.Close()
	deadline := time.Now().Add(5 * time.Second)
	for s.g.open.Load() > 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !open(dial()) {
		t.Error("a connection after one closed was refused")
	}
}
