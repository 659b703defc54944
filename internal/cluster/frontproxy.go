package cluster

import (
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"net/http"
	"slices"
	"time"

	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
)

// frontProxyAuthn trusts kube-apiserver's identity headers (X-Remote-User,
// X-Remote-Group, X-Remote-Extra-*) over a client certificate that chains
// to the request-header CA and carries an allowed common name: kube's
// request-header authenticator (k8s.io/apiserver's headerrequest reads the
// headers), with the certificate's verification remembered.
//
// Why remember it: every lease request kube-apiserver proxies arrives with
// the same front-proxy certificate on a few long-lived connections, and
// kube's authenticator verifies the chain again on every request. That
// verification was 19% of Leasehold's CPU behind a cluster (profile of
// 1,000 renewals/s through kube-apiserver, RSA-2048 front-proxy
// certificate); a remembered verdict costs a SHA-256 of the certificate
// and one lookup.
//
// A verdict is remembered per certificate chain and CA pool: the pool
// object changes whenever the request-header CA bundle does (the
// ConfigMap's or the file's), so a rotated CA is never judged by an old
// verdict. A good verdict lasts until the chain's first expiry, a failure
// negativeVerifyTTL. The allowed names are read on every request, since
// they follow the ConfigMap and cost no cryptography.
type frontProxyAuthn struct {
	verifyOptions x509request.VerifyOptionFunc
	allowedNames  headerrequest.StringSliceProvider
	headers       authenticator.Request
	verdicts      *utilcache.LRUExpireCache
	now           func() time.Time
	// verify is x509.Certificate.Verify (a test counts the calls).
	verify func(*x509.Certificate, x509.VerifyOptions) ([][]*x509.Certificate, error)
}

// negativeVerifyTTL is how long a certificate that failed verification
// stays failed without another try: a client that is not kube-apiserver
// (a kubelet's certificate of the cluster CA) costs one verification per
// connection and TTL, not one per request.
const negativeVerifyTTL = 10 * time.Second

// frontProxyVerdicts bounds the remembered chains: kube-apiserver replicas
// share one front-proxy certificate, other clients each bring theirs.
const frontProxyVerdicts = 4096

func newFrontProxyAuthn(cfg *authenticatorConfigRH) *frontProxyAuthn {
	return &frontProxyAuthn{
		verifyOptions: cfg.verifyOptions,
		allowedNames:  cfg.allowedNames,
		headers:       headerrequest.NewDynamic(cfg.usernames, cfg.uids, cfg.groups, cfg.extraPrefixes),
		verdicts:      utilcache.NewLRUExpireCache(frontProxyVerdicts),
		now:           time.Now,
		verify: func(c *x509.Certificate, o x509.VerifyOptions) ([][]*x509.Certificate, error) {
			return c.Verify(o)
		},
	}
}

// authenticatorConfigRH is what the front-proxy authenticator reads, each
// part current (from the ConfigMap, or fixed by flags).
type authenticatorConfigRH struct {
	verifyOptions                          x509request.VerifyOptionFunc
	allowedNames                           headerrequest.StringSliceProvider
	usernames, uids, groups, extraPrefixes headerrequest.StringSliceProvider
}

type verdictKey struct {
	chain [sha256.Size]byte
	roots *x509.CertPool
}

// AuthenticateRequest implements authenticator.Request, as kube's
// request-header authenticator: no client certificate is no opinion; a
// certificate that does not verify, or a name not allowed, is an error.
func (a *frontProxyAuthn) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	opts, ok := a.verifyOptions()
	if !ok {
		// No request-header CA (yet): nobody is a front proxy.
		return nil, false, nil
	}
	peers := r.TLS.PeerCertificates
	key := verdictKey{roots: opts.Roots}
	h := sha256.New()
	for _, c := range peers {
		h.Write(c.Raw)
	}
	h.Sum(key.chain[:0])
	var err error
	if v, hit := a.verdicts.Get(key); hit {
		if v != nil {
			err = v.(error)
		}
	} else {
		err = a.verifyChain(peers, opts, key)
	}
	if err != nil {
		return nil, false, err
	}
	if names := a.allowedNames.Value(); len(names) > 0 && !slices.Contains(names, peers[0].Subject.CommonName) {
		return nil, false, fmt.Errorf("x509: subject with cn=%s is not in the allowed list", peers[0].Subject.CommonName)
	}
	return a.headers.AuthenticateRequest(r)
}

// verifyChain verifies the leaf with the client's intermediates, and
// remembers the verdict.
func (a *frontProxyAuthn) verifyChain(peers []*x509.Certificate, opts x509.VerifyOptions, key verdictKey) error {
	if opts.Intermediates == nil && len(peers) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, c := range peers[1:] {
			opts.Intermediates.AddCert(c)
		}
	}
	chains, err := a.verify(peers[0], opts)
	if err != nil {
		err = fmt.Errorf("verifying the front proxy's client certificate: %w", err)
		a.verdicts.Add(key, err, negativeVerifyTTL)
		return err
	}
	ttl := chainsExpiry(chains).Sub(a.now())
	if ttl > 0 {
		a.verdicts.Add(key, nil, ttl)
	}
	return nil
}

// chainsExpiry is the earliest NotAfter in any verified chain.
func chainsExpiry(chains [][]*x509.Certificate) time.Time {
	var first time.Time
	for _, chain := range chains {
		for _, c := range chain {
			if first.IsZero() || c.NotAfter.Before(first) {
				first = c.NotAfter
			}
		}
	}
	return first
}
