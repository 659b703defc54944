package authn

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/leasehold/leasehold/internal/request"
)

// uidOID is the subject RDN that carries a user's UID in a client
// certificate (Kubernetes' AllowParsingUserUIDFromCertAuth, PR #127897).
var uidOID = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57683, 2}

// CertAuthenticator identifies callers by their TLS client certificate, as
// kube-apiserver's x509 authenticator: the user is the subject's common name
// and the groups are every organization of the subject.
//
// TLS only requests the certificate (tls.RequestClientCert) and this
// authenticator verifies it, so that a certificate from an unknown CA, or an
// expired one, is answered 401 with a Status body rather than failing the
// handshake with an error no kubectl user can read.
type CertAuthenticator struct {
	roots *x509.CertPool
	cache *verifyCache
	now   func() time.Time
}

// NewCertAuthenticator returns an authenticator that trusts client
// certificates chaining to roots for client authentication. cacheSize bounds
// the number of verification results kept (see verifyCache).
func NewCertAuthenticator(roots *x509.CertPool, cacheSize int) *CertAuthenticator {
	return newCertAuthenticator(roots, cacheSize, time.Now)
}

func newCertAuthenticator(roots *x509.CertPool, cacheSize int, now func() time.Time) *CertAuthenticator {
	return &CertAuthenticator{roots: roots, cache: newVerifyCache(cacheSize, now), now: now}
}

// AuthenticateRequest implements Authenticator. A request without a client
// certificate carries no credential (ok=false, nil error). A certificate
// that verifies but names no user (empty common name) is no credential
// either, as in Kubernetes.
func (a *CertAuthenticator) AuthenticateRequest(r *http.Request) (request.User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return request.User{}, false, nil
	}
	peers := r.TLS.PeerCertificates
	memo := memoOf(r.Context())
	if memo != nil {
		if res, ok := memo.lookup(a, peers); ok {
			return res.user, res.ok, res.err
		}
	}
	key := ChainKey(peers)
	res, ok := a.cache.get(key)
	if !ok {
		res = a.verify(peers)
		a.cache.add(key, res)
	}
	if memo != nil {
		memo.remember(a, peers, res)
	}
	return res.user, res.ok, res.err
}

// verify checks the chain the client sent (leaf first, then any
// intermediates) against the trusted roots, as of now.
func (a *CertAuthenticator) verify(peers []*x509.Certificate) verifyResult {
	now := a.now()
	leaf := peers[0]
	opts := x509.VerifyOptions{
		Roots:       a.roots,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if len(peers) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, c := range peers[1:] {
			opts.Intermediates.AddCert(c)
		}
	}
	chains, err := leaf.Verify(opts)
	if err != nil {
		return verifyResult{
			err:     fmt.Errorf("verifying certificate %s failed: %w", certificateIdentifier(leaf), err),
			expires: now.Add(NegativeVerifyTTL),
		}
	}
	u, ok, err := userFromCert(leaf)
	if err != nil {
		return verifyResult{err: err, expires: now.Add(NegativeVerifyTTL)}
	}
	return verifyResult{user: u, ok: ok, expires: ChainExpiry(chains)}
}

// chainExpiry is when the verification of chains stops holding: the
// earliest NotAfter over the chain that lasts longest.
func ChainExpiry(chains [][]*x509.Certificate) time.Time {
	var best time.Time
	for _, chain := range chains {
		end := chain[0].NotAfter
		for _, c := range chain[1:] {
			if c.NotAfter.Before(end) {
				end = c.NotAfter
			}
		}
		if end.After(best) {
			best = end
		}
	}
	return best
}

// userFromCert maps a verified leaf to its user: CN, every O, and the UID
// RDN when present.
func userFromCert(leaf *x509.Certificate) (request.User, bool, error) {
	if leaf.Subject.CommonName == "" {
		return request.User{}, false, nil
	}
	uid, err := uidFromSubject(leaf.Subject)
	if err != nil {
		return request.User{}, false, err
	}
	return request.User{
		Name:   leaf.Subject.CommonName,
		UID:    uid,
		Groups: append([]string(nil), leaf.Subject.Organization...),
	}, true, nil
}

// uidFromSubject returns the value of the UID RDN, which may appear at most
// once and must be a string.
func uidFromSubject(name pkix.Name) (string, error) {
	var uid string
	found := false
	for _, atv := range name.Names {
		if !atv.Type.Equal(uidOID) {
			continue
		}
		if found {
			return "", errors.New("x509: the subject holds more than one UID")
		}
		s, ok := atv.Value.(string)
		if !ok {
			return "", fmt.Errorf("x509: the subject's UID is a %T, not a string", atv.Value)
		}
		uid, found = s, true
	}
	return uid, nil
}

// certificateIdentifier names a certificate in errors the way Kubernetes
// does, by serial number and key identifiers (never by subject, which a
// client chooses freely).
func certificateIdentifier(c *x509.Certificate) string {
	return fmt.Sprintf("SN=%d, SKID=%s, AKID=%s", c.SerialNumber, colonHex(c.SubjectKeyId), colonHex(c.AuthorityKeyId))
}

// colonHex formats b as upper-case hex bytes separated by colons.
func colonHex(b []byte) string {
	var sb strings.Builder
	for i, c := range b {
		if i > 0 {
			sb.WriteByte(':')
		}
		sb.WriteString(strings.ToUpper(hex.EncodeToString([]byte{c})))
	}
	return sb.String()
}
