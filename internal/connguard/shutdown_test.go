package connguard

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// A connection accepted before Shutdown whose TLS handshake ends after it
// began starts serving HTTP/2 after x/net sent its graceful GOAWAYs. It must
// get one too: before, nothing ever told it to go, so Shutdown waited for
// its whole deadline (an in-process controller re-dialling when its watch
// was closed made the test servers' shutdown take 30 s now and then).
func TestShutdownReachesConnectionsThatStartDuringIt(t *testing.T) {
	s := startGuarded(t, Config{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	raw, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for deadline := time.Now().Add(5 * time.Second); s.g.open.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the connection was not accepted within 5 s")
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	shutdown := make(chan error, 1)
	go func() { shutdown <- s.srv.Shutdown(ctx) }()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			break // the listener is closed: Shutdown has run its hooks
		}
		_ = c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the listener was not closed within 5 s of Shutdown")
		}
	}
	time.Sleep(200 * time.Millisecond) // and the hooks have sent their GOAWAYs

	c := tls.Client(raw, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	if err := http2.NewFramer(c, c).WriteSettings(); err != nil {
		t.Fatal(err)
	}
	ga, _ := goAwayOf(t, c, 5*time.Second)
	if ga == nil || ga.ErrCode != http2.ErrCodeNo {
		t.Fatalf("GOAWAY %+v, want one with NO_ERROR", ga)
	}
	select {
	case err := <-shutdown:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown did not return within 5 s of the connection's end")
	}
}
