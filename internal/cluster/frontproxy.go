package cluster

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"slices"
	"time"

	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"

	"github.com/leasehold/leasehold/internal/authn"
)

// certVerifier verifies client certificate chains against a CA bundle
// that may change (the cluster's ConfigMap, or a file), and remembers each
// verdict.
//
// Why remember it: every lease request kube-apiserver proxies arrives with
// the same front-proxy certificate on a few long-lived connections, and
// kube's authenticators verify the chain again on every request. That
// verification was 19% of Leasehold's CPU behind a cluster (profile of
// 1,000 renewals/s through kube-apiserver, RSA-2048 front-proxy
// certificate); a remembered verdict costs a SHA-256 of the certificate
// and one lookup. Clients of the cluster's CA that talk to Leasehold
// directly (a node's agent, a controller) renew with one certificate too.
//
// A verdict is remembered per certificate chain and CA pool: the pool
// object changes whenever the bundle does, so a rotated CA is never judged
// by an old verdict. A good verdict lasts until the chain's first expiry, a
// failure authn.NegativeVerifyTTL.
type certVerifier struct {
	verifyOptions x509request.VerifyOptionFunc
	verdicts      *utilcache.LRUExpireCache
	now           func() time.Time
	// verify is x509.Certificate.Verify (a test counts the calls).
	verify func(*x509.Certificate, x509.VerifyOptions) ([][]*x509.Certificate, error)
}

func newCertVerifier(opts x509request.VerifyOptionFunc, size int) *certVerifier {
	return &certVerifier{
		verifyOptions: opts,
		verdicts:      utilcache.NewLRUExpireCache(size),
		now:           time.Now,
		verify: func(c *x509.Certificate, o x509.VerifyOptions) ([][]*x509.Certificate, error) {
			return c.Verify(o)
		},
	}
}

// check verifies the request's client certificate chain. ok=false: the
// request has no client certificate, or there is no CA (yet) to judge it
// by; err: the chain does not verify.
func (v *certVerifier) check(r *http.Request) (peers []*x509.Certificate, ok bool, err error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	opts, ok := v.verifyOptions()
	if !ok {
		return nil, false, nil
	}
	peers = r.TLS.PeerCertificates
	key := verdictKey{chain: authn.ChainKey(peers), roots: opts.Roots}
	if cached, hit := v.verdicts.Get(key); hit {
		if cached != nil {
			return nil, true, cached.(error)
		}
		return peers, true, nil
	}
	if err := v.verifyChain(peers, opts, key); err != nil {
		return nil, true, err
	}
	return peers, true, nil
}

// frontProxyAuthn trusts kube-apiserver's identity headers (X-Remote-User,
// X-Remote-Group, X-Remote-Extra-*) over a client certificate that chains
// to the request-header CA and carries an allowed common name: kube's
// request-header authenticator (k8s.io/apiserver's headerrequest reads the
// headers), with the certificate's verdict remembered (certVerifier). The
// allowed names are read on every request, since they follow the
// ConfigMap and cost no cryptography.
type frontProxyAuthn struct {
	certs        *certVerifier
	allowedNames headerrequest.StringSliceProvider
	headers      authenticator.Request
}

// clientCertAuthn is kube's x509 authenticator for the cluster's client CA
// (common name the user, organizations the groups, the certificate's
// hash the credential-id extra), with the verdict remembered.
type clientCertAuthn struct {
	certs *certVerifier
}

// AuthenticateRequest implements authenticator.Request.
func (a *clientCertAuthn) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	peers, ok, err := a.certs.check(r)
	if !ok || err != nil {
		return nil, false, err
	}
	return x509request.CommonNameUserConversion.User(peers)
}

// frontProxyVerdicts bounds the remembered chains of the front-proxy
// check: kube-apiserver replicas share one certificate, and every other
// client (failing the check) brings its own. clientCertVerdicts is the
// same for the cluster's client CA: one certificate per node or
// controller that talks to Leasehold directly.
const (
	frontProxyVerdicts = 4096
	clientCertVerdicts = 1 << 17
)

func newFrontProxyAuthn(cfg *authenticatorConfigRH) *frontProxyAuthn {
	return &frontProxyAuthn{
		certs:        newCertVerifier(cfg.verifyOptions, frontProxyVerdicts),
		allowedNames: cfg.allowedNames,
		headers:      headerrequest.NewDynamic(cfg.usernames, cfg.uids, cfg.groups, cfg.extraPrefixes),
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
	chain [32]byte // authn.ChainKey
	roots *x509.CertPool
}

// AuthenticateRequest implements authenticator.Request, as kube's
// request-header authenticator: no client certificate is no opinion; a
// certificate that does not verify, or a name not allowed, is an error.
func (a *frontProxyAuthn) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	peers, ok, err := a.certs.check(r)
	if !ok || err != nil {
		return nil, false, err
	}
	if names := a.allowedNames.Value(); len(names) > 0 && !slices.Contains(names, peers[0].Subject.CommonName) {
		return nil, false, fmt.Errorf("x509: subject with cn=%s is not in the allowed list", peers[0].Subject.CommonName)
	}
	return a.headers.AuthenticateRequest(r)
}

// verifyChain verifies the leaf with the client's intermediates, and
// remembers the verdict.
func (v *certVerifier) verifyChain(peers []*x509.Certificate, opts x509.VerifyOptions, key verdictKey) error {
	if opts.Intermediates == nil && len(peers) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, c := range peers[1:] {
			opts.Intermediates.AddCert(c)
		}
	}
	chains, err := v.verify(peers[0], opts)
	if err != nil {
		err = fmt.Errorf("verifying the client certificate: %w", err)
		v.verdicts.Add(key, err, authn.NegativeVerifyTTL)
		return err
	}
	ttl := authn.ChainExpiry(chains).Sub(v.now())
	if ttl > 0 {
		v.verdicts.Add(key, nil, ttl)
	}
	return nil
}
