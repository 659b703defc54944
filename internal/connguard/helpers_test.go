package connguard

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// guarded is a guarded HTTPS server on 127.0.0.1, stopped when the test ends.
type guarded struct {
	addr string
	g    *Guard
	reg  *prometheus.Registry
	srv  *http.Server
}

// startGuarded serves handler behind a Guard made from cfg.
func startGuarded(t *testing.T, cfg Config, handler http.Handler) *guarded {
	t.Helper()
	reg := prometheus.NewRegistry()
	g, err := New(cfg, reg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := g.Server(handler, &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(g.Listener(ln), "", "") }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serving: %v", err)
		}
	})
	return &guarded{addr: ln.Addr().String(), g: g, reg: reg, srv: srv}
}

// counter reads a counter (or one child of a vector) from s's registry.
func (s *guarded) counter(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	return testutil.ToFloat64(c)
}

// selfSigned makes a serving certificate for 127.0.0.1.
func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "connguard test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// dialH2 opens a TLS connection that negotiated h2 and has sent the client
// preface and an empty SETTINGS frame.
func dialH2(t *testing.T, addr string) (*tls.Conn, *http2.Framer) {
	t.Helper()
	c := dialTLS(t, addr)
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return c, fr
}

// dialTLS opens a TLS connection that negotiated h2 and has sent nothing.
func dialTLS(t *testing.T, addr string) *tls.Conn {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("negotiated %q, want h2", p)
	}
	return c
}

// goAwayOf reads the server's frames until the connection ends and returns
// the GOAWAY among them (nil if none) and how long the reading took.
func goAwayOf(t *testing.T, c net.Conn, within time.Duration) (*http2.GoAwayFrame, time.Duration) {
	t.Helper()
	start := time.Now()
	if err := c.SetReadDeadline(start.Add(within)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(nil, c)
	var ga *http2.GoAwayFrame
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("connection still open after %v", within)
			}
			return ga, time.Since(start)
		}
		if g, ok := f.(*http2.GoAwayFrame); ok && ga == nil {
			ga = &http2.GoAwayFrame{FrameHeader: g.FrameHeader, LastStreamID: g.LastStreamID, ErrCode: g.ErrCode}
		}
	}
}

// getHeaders is the HPACK block of a GET of path.
func getHeaders(path string) []byte {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "127.0.0.1"}, {":path", path}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	return buf.Bytes()
}
