package bench

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// A server that does not speak HTTP/2 gets a clear error from the lean
// client, which speaks nothing else, rather than a failed HTTP/2 preface.
func TestLeanClientNeedsHTTP2(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	c := startLeanAgainst(t, srv)
	resp, err := c.lean[0].http.Get(srv.URL)
	if err == nil {
		_ = resp.Body.Close()
		t.Fatalf("an HTTP/1.1-only server answered the lean client: %s", resp.Status)
	}
	if !strings.Contains(err.Error(), "the lean client speaks nothing else") {
		t.Fatalf("error %q does not say the server lacks HTTP/2", err)
	}
}

// The lean client's connections are HTTP/2 over TLS with the coalescer
// above TLS, and Close closes them.
func TestLeanClientSpeaksHTTP2AboveTheCoalescer(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(r.Proto))
	}))
	srv.EnableHTTP2 = true
	c := startLeanAgainst(t, srv)
	resp, err := c.lean[0].http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := string(body); got != "HTTP/2.0" {
		t.Fatalf("served over %q, want HTTP/2.0", got)
	}
	c.mu.Lock()
	var coalesced int
	for conn := range c.conns {
		if _, ok := conn.(*coalescedTLS); ok {
			coalesced++
		}
	}
	c.mu.Unlock()
	if coalesced != 1 {
		t.Fatalf("%d coalesced TLS connections, want 1", coalesced)
	}
	c.Close()
}

// startLeanAgainst starts srv with TLS and returns one lean connection's
// clients for it; both are closed when the test ends.
func startLeanAgainst(t *testing.T, srv *httptest.Server) *Clients {
	t.Helper()
	srv.StartTLS()
	t.Cleanup(srv.Close)
	cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	c, err := NewClientsOfKind(cfg, ClientLean, ContentTypeProtobuf, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
