package authn

import (
	"path/filepath"
	"testing"
)

// BenchmarkCertAuthenticator compares what a request pays to identify a
// node by its client certificate without the verification cache (a full
// chain verification), with it (a hash of the certificate and a lookup),
// with its connection's memo (a context lookup and a time check),
// and through the whole server chain (group adder and anonymous fallback
// included).
func BenchmarkCertAuthenticator(b *testing.B) {
	ca := newTestCA(b, "ca")
	cert := ca.issue(b, clientTemplate("system:node:n1", "system:nodes"))
	b.Run("uncached", func(b *testing.B) {
		a := NewCertAuthenticator(ca.pool(), 0)
		peers := certRequest(cert).TLS.PeerCertificates
		b.ReportAllocs()
		for b.Loop() {
			if res := a.verify(peers); !res.ok {
				b.Fatal(res.err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		a := NewCertAuthenticator(ca.pool(), 0)
		r := certRequest(cert)
		b.ReportAllocs()
		for b.Loop() {
			if _, ok, err := a.AuthenticateRequest(r); !ok {
				b.Fatal(err)
			}
		}
	})
	b.Run("memo", func(b *testing.B) {
		a := NewCertAuthenticator(ca.pool(), 0)
		r := certRequest(cert)
		r = r.WithContext(WithConnectionMemo(r.Context(), nil))
		b.ReportAllocs()
		for b.Loop() {
			if _, ok, err := a.AuthenticateRequest(r); !ok {
				b.Fatal(err)
			}
		}
	})
	b.Run("chain", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "tokens.csv")
		if err := writeFile(path, "tok,u,1\n"); err != nil {
			b.Fatal(err)
		}
		c, err := New(Config{ClientCAs: ca.pool(), TokenFile: path, Anonymous: true})
		if err != nil {
			b.Fatal(err)
		}
		r := certRequest(cert)
		b.ReportAllocs()
		for b.Loop() {
			if _, ok, err := c.AuthenticateRequest(r); !ok {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkBearerToken is a request with a static token through the chain.
func BenchmarkBearerToken(b *testing.B) {
	path := filepath.Join(b.TempDir(), "tokens.csv")
	if err := writeFile(path, "0123456789abcdef0123456789abcdef,u,1,g\n"); err != nil {
		b.Fatal(err)
	}
	c, err := New(Config{ClientCAs: newTestCA(b, "ca").pool(), TokenFile: path, Anonymous: true})
	if err != nil {
		b.Fatal(err)
	}
	r := bearerRequest("")
	header := []string{"Bearer 0123456789abcdef0123456789abcdef"}
	b.ReportAllocs()
	for b.Loop() {
		r.Header["Authorization"] = header // removed on success
		if _, ok, err := c.AuthenticateRequest(r); !ok {
			b.Fatal(err)
		}
	}
}
