package authn

import (
	"crypto/sha256"
	"crypto/x509"
	"time"

	"k8s.io/apimachinery/pkg/util/cache"

	"github.com/leasehold/leasehold/internal/request"
)

// DefaultCertCacheSize is how many client certificate chains keep their
// verification result: enough for a fleet of 100,000 nodes, each with its own
// certificate, plus the controllers and admins. An entry costs about 340
// bytes of heap (measured with node names and one group), so some 34 MiB
// for 100,000 nodes; a smaller cache would make such a fleet verify a chain
// on most renewals.
const DefaultCertCacheSize = 1 << 17

// NegativeVerifyTTL is how long a failed verification is remembered (here
// and by the cluster's certificate checks, internal/cluster). Failures are
// cached so that a client sending many requests with a bad certificate over
// one connection does not cost a chain verification each; the TTL is short
// because a certificate that is not yet valid becomes valid by itself.
const NegativeVerifyTTL = 10 * time.Second

// verifyCache remembers the outcome of verifying a client certificate chain,
// keyed by a hash of the DER bytes of every certificate the client sent.
//
// What it saves: a node renews its lease every 10 s with the same
// certificate, and verifying its ECDSA P-256 chain (signature check, name
// chaining, key usage) costs about 130-190 µs and 33 allocations per
// request, more than the ~100 µs a whole renewal may cost (docs/performance.md,
// "The cost of a renewal"). A
// cache hit costs about 1.1 µs and no allocation: a SHA-256 of the
// certificate and one lookup (BenchmarkCertAuthenticator, 2-core
// Turin VM). Keying on the bytes rather
// than the connection's *x509.Certificate keeps the result across
// reconnections, and the hash keeps every key 32 bytes.
//
// A successful result expires with the chain (the earliest NotAfter of the
// verified chain), so an expired certificate is refused from the first
// request after its expiry; the roots never change during the cache's life.
type verifyCache struct {
	lru *cache.LRUExpireCache
	now func() time.Time
}

// verifyResult is what AuthenticateRequest answers for a chain, and until
// when that answer holds.
type verifyResult struct {
	user    request.User
	ok      bool
	err     error
	expires time.Time
}

func newVerifyCache(size int, now func() time.Time) *verifyCache {
	if size <= 0 {
		size = DefaultCertCacheSize
	}
	return &verifyCache{lru: cache.NewLRUExpireCacheWithClock(size, clockFunc(now)), now: now}
}

// cacheKey hashes the certificates the client presented, in order.
func ChainKey(peers []*x509.Certificate) [sha256.Size]byte {
	if len(peers) == 1 {
		return sha256.Sum256(peers[0].Raw)
	}
	h := sha256.New()
	for _, c := range peers {
		h.Write(c.Raw)
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}

func (c *verifyCache) get(key [sha256.Size]byte) (verifyResult, bool) {
	v, ok := c.lru.Get(key)
	if !ok {
		return verifyResult{}, false
	}
	return v.(verifyResult), true
}

func (c *verifyCache) add(key [sha256.Size]byte, res verifyResult) {
	if ttl := res.expires.Sub(c.now()); ttl > 0 {
		c.lru.Add(key, res, ttl)
	}
}

// clockFunc adapts a time source to the cache's Clock.
type clockFunc func() time.Time

func (f clockFunc) Now() time.Time { return f() }
