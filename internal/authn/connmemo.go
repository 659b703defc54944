package authn

import (
	"context"
	"crypto/x509"
	"net"
	"sync/atomic"
)

// A TLS client presents its certificate once per connection, and every
// request on that connection carries the same one (Go's TLS server never
// renegotiates). The verification cache (certcache.go) still hashes the
// certificate and takes an LRU's lock on every request: about 1.1 µs, 1.8%
// of serve's CPU profile under bench max. A connection memo keeps the
// verdict for the connection's own certificate where its requests find it,
// in their context, for as long as the verdict holds
// (BenchmarkCertAuthenticator, one pinned core: cached 487-491 ns, memo
// 80-96 ns per request).

// connMemoKey is the context key of a connection's memo.
type connMemoKey struct{}

// connMemo holds the verdict on a connection's client certificate.
type connMemo struct {
	last atomic.Pointer[memoEntry]
}

// memoEntry is a verdict and what it was given for: the authenticator
// (whose roots decided it) and the connection's certificate objects.
type memoEntry struct {
	auth  *CertAuthenticator
	leaf  *x509.Certificate
	peers int
	res   verifyResult
}

// WithConnectionMemo returns ctx with a fresh memo for one connection's
// certificate verdict: the http.Server's ConnContext, so that every request
// on the connection shares it.
func WithConnectionMemo(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, connMemoKey{}, &connMemo{})
}

// memoOf returns the memo of the request's connection, or nil.
func memoOf(ctx context.Context) *connMemo {
	m, _ := ctx.Value(connMemoKey{}).(*connMemo)
	return m
}

// lookup returns the verdict a gave this connection's peers, if it still
// holds.
func (m *connMemo) lookup(a *CertAuthenticator, peers []*x509.Certificate) (verifyResult, bool) {
	e := m.last.Load()
	if e == nil || e.auth != a || e.leaf != peers[0] || e.peers != len(peers) || !a.now().Before(e.res.expires) {
		return verifyResult{}, false
	}
	return e.res, true
}

// remember records a's verdict on peers for the connection.
func (m *connMemo) remember(a *CertAuthenticator, peers []*x509.Certificate, res verifyResult) {
	m.last.Store(&memoEntry{auth: a, leaf: peers[0], peers: len(peers), res: res})
}
