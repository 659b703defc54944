package authn

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"
)

// testCA is a certificate authority for tests, able to issue certificates
// that the production code never would (expired, server-only, odd
// subjects).
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t testing.TB, name string) *testCA {
	t.Helper()
	return newCA(t, name, nil, 24*time.Hour)
}

// intermediate issues a CA certificate under ca.
func (ca *testCA) intermediate(t testing.TB, name string) *testCA {
	t.Helper()
	return newCA(t, name, ca, 12*time.Hour)
}

// newCA makes a CA valid for validity, self-signed when parent is nil.
func newCA(t testing.TB, name string, parent *testCA, validity time.Duration) *testCA {
	t.Helper()
	key := mustKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	signerCert, signerKey := tmpl, key
	if parent != nil {
		tmpl.SerialNumber = big.NewInt(2)
		signerCert, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, key.Public(), signerKey)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: mustParse(t, der), key: key}
}

func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// clientTemplate is a valid client certificate template for cn in groups.
func clientTemplate(cn string, groups ...string) *x509.Certificate {
	return &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn, Organization: groups},
		NotBefore:   time.Now().Add(-time.Minute),
		NotAfter:    time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
}

// issue signs tmpl (a fresh key, a random serial).
func (ca *testCA) issue(t testing.TB, tmpl *x509.Certificate) *x509.Certificate {
	t.Helper()
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = serial
	key := mustKey(t)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return mustParse(t, der)
}

func mustKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func mustParse(t testing.TB, der []byte) *x509.Certificate {
	t.Helper()
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// certRequest is a request over TLS whose client sent peers.
func certRequest(peers ...*x509.Certificate) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "https://127.0.0.1/api", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: peers}
	return r
}

// bearerRequest is a request with the given Authorization header.
func bearerRequest(header string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "https://127.0.0.1/api", nil)
	r.TLS = &tls.ConnectionState{}
	if header != "" {
		r.Header.Set("Authorization", header)
	}
	return r
}

// logBuffer collects log output written from any goroutine.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newTestLogger() (*slog.Logger, *logBuffer) {
	buf := &logBuffer{}
	return slog.New(slog.NewTextHandler(buf, nil)), buf
}

// fakeClock is a settable time source.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// writeFile writes content to path with mode 0600.
func writeFile(path, content string) error {
	return os.WriteFile(path, []byte(content), 0o600)
}
