package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/http"
	"slices"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
)

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T, cn string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

func (ca *testCA) client(t *testing.T, cn string) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return cert
}

// TestFrontProxyRemembersItsVerdict: the front proxy's certificate is
// verified once and then trusted from memory; an unknown CA, a name not
// allowed and a rotated CA are judged as kube's request-header
// authenticator judges them.
func TestFrontProxyRemembersItsVerdict(t *testing.T) {
	ca := newTestCA(t, "front-proxy-ca")
	current := ca.pool
	a := newFrontProxyAuthn(&authenticatorConfigRH{
		verifyOptions: func() (x509.VerifyOptions, bool) {
			return x509.VerifyOptions{Roots: current, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, true
		},
		allowedNames:  headerrequest.StaticStringSlice{"front-proxy-client"},
		usernames:     headerrequest.StaticStringSlice{"X-Remote-User"},
		uids:          headerrequest.StaticStringSlice{"X-Remote-Uid"},
		groups:        headerrequest.StaticStringSlice{"X-Remote-Group"},
		extraPrefixes: headerrequest.StaticStringSlice{"X-Remote-Extra-"},
	})
	verifications := 0
	a.certs.verify = func(c *x509.Certificate, o x509.VerifyOptions) ([][]*x509.Certificate, error) {
		verifications++
		return c.Verify(o)
	}
	req := func(cert *x509.Certificate) *http.Request {
		r, _ := http.NewRequest(http.MethodPut, "https://leasehold/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", nil)
		r.Header.Set("X-Remote-User", "system:node:n1")
		r.Header.Add("X-Remote-Group", "system:nodes")
		r.Header.Add("X-Remote-Group", "system:authenticated")
		r.Header.Set("X-Remote-Extra-Authentication.kubernetes.io%2fcredential-Id", "X509SHA256=ab")
		if cert != nil {
			r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}
		}
		return r
	}

	proxy := ca.client(t, "front-proxy-client")
	for i := range 3 {
		resp, ok, err := a.AuthenticateRequest(req(proxy))
		if err != nil || !ok {
			t.Fatalf("request %d through the front proxy: ok=%v err=%v", i, ok, err)
		}
		u := resp.User
		if u.GetName() != "system:node:n1" || !slices.Equal(u.GetGroups(), []string{"system:nodes", "system:authenticated"}) ||
			!slices.Equal(u.GetExtra()["authentication.kubernetes.io/credential-id"], []string{"X509SHA256=ab"}) {
			t.Errorf("request %d: user %q groups %v extra %v", i, u.GetName(), u.GetGroups(), u.GetExtra())
		}
	}
	if verifications != 1 {
		t.Errorf("3 requests over one certificate verified it %d times, want 1", verifications)
	}

	if _, ok, err := a.AuthenticateRequest(req(ca.client(t, "someone-else"))); ok || err == nil {
		t.Errorf("a certificate of the CA with a name not allowed: ok=%v err=%v, want an error", ok, err)
	}
	stranger := newTestCA(t, "other-ca").client(t, "front-proxy-client")
	for range 2 {
		if _, ok, err := a.AuthenticateRequest(req(stranger)); ok || err == nil {
			t.Errorf("a certificate of another CA: ok=%v err=%v, want an error", ok, err)
		}
	}
	if verifications != 3 {
		t.Errorf("after the stranger's two requests, %d verifications, want 3 (its failure is remembered)", verifications)
	}
	if _, ok, err := a.AuthenticateRequest(req(nil)); ok || err != nil {
		t.Errorf("no client certificate: ok=%v err=%v, want no opinion", ok, err)
	}

	// The CA bundle rotates to one without the front proxy's CA: the old
	// verdict does not carry over.
	current = newTestCA(t, "rotated").pool
	if _, ok, err := a.AuthenticateRequest(req(proxy)); ok || err == nil {
		t.Errorf("after the CA rotated away: ok=%v err=%v, want an error", ok, err)
	}
}

// TestClientCertificateVerdictIsRemembered: a client of the cluster's CA
// talking to Leasehold directly is kube's x509 user (common name, the
// certificate's hash as credential-id), verified once for its requests.
func TestClientCertificateVerdictIsRemembered(t *testing.T) {
	ca := newTestCA(t, "cluster-ca")
	a := &clientCertAuthn{certs: newCertVerifier(func() (x509.VerifyOptions, bool) {
		return x509.VerifyOptions{Roots: ca.pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, true
	}, 16)}
	verifications := 0
	a.certs.verify = func(c *x509.Certificate, o x509.VerifyOptions) ([][]*x509.Certificate, error) {
		verifications++
		return c.Verify(o)
	}
	cert := ca.client(t, "system:node:n1")
	for i := range 3 {
		r, _ := http.NewRequest(http.MethodGet, "https://leasehold/", nil)
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}
		resp, ok, err := a.AuthenticateRequest(r)
		if err != nil || !ok || resp.User.GetName() != "system:node:n1" || len(resp.User.GetExtra()["authentication.kubernetes.io/credential-id"]) != 1 {
			t.Fatalf("request %d: %+v ok=%v err=%v", i, resp, ok, err)
		}
	}
	if verifications != 1 {
		t.Errorf("3 requests verified the certificate %d times, want 1", verifications)
	}
}
