package authn

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCertAuthenticatorValidCertificate(t *testing.T) {
	ca := newTestCA(t, "ca")
	a := NewCertAuthenticator(ca.pool(), 0)
	cert := ca.issue(t, clientTemplate("system:node:n1", "system:nodes", "extra"))
	for i := range 2 { // the second answer comes from the cache
		u, ok, err := a.AuthenticateRequest(certRequest(cert))
		if err != nil || !ok {
			t.Fatalf("request %d: ok=%v err=%v", i, ok, err)
		}
		slices.Sort(u.Groups)
		if u.Name != "system:node:n1" || !slices.Equal(u.Groups, []string{"extra", "system:nodes"}) || u.UID != "" {
			t.Fatalf("request %d: user %+v", i, u)
		}
	}
}

func TestCertAuthenticatorRefusals(t *testing.T) {
	ca := newTestCA(t, "ca")
	other := newTestCA(t, "other")
	expired := clientTemplate("alice")
	expired.NotBefore, expired.NotAfter = time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour)
	serverOnly := clientTemplate("alice")
	serverOnly.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}

	cases := []struct {
		name string
		cert *x509.Certificate
		want string
	}{
		{"another CA", other.issue(t, clientTemplate("mallory", "system:masters")), "certificate signed by unknown authority"},
		{"expired", ca.issue(t, expired), "certificate has expired or is not yet valid"},
		{"server auth only", ca.issue(t, serverOnly), "certificate specifies an incompatible key usage"},
	}
	a := NewCertAuthenticator(ca.pool(), 0)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i := range 2 { // the second answer comes from the cache
				u, ok, err := a.AuthenticateRequest(certRequest(tc.cert))
				if ok || err == nil {
					t.Fatalf("request %d: accepted as %+v", i, u)
				}
				prefix := "verifying certificate SN=" + tc.cert.SerialNumber.String() + ", SKID="
				if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("request %d: error %q, want %q... %q", i, err, prefix, tc.want)
				}
			}
		})
	}
}

func TestCertAuthenticatorNoCredential(t *testing.T) {
	ca := newTestCA(t, "ca")
	a := NewCertAuthenticator(ca.pool(), 0)
	plain := httptest.NewRequest("GET", "http://127.0.0.1/api", nil) // no TLS at all
	noCN := ca.issue(t, clientTemplate("", "system:masters"))
	for name, r := range map[string]*httptestRequest{
		"no TLS":         {plain},
		"no certificate": {certRequest()},
		// A trusted certificate that names no user is no credential, as
		// in Kubernetes; it must not be an error either.
		"empty common name": {certRequest(noCN)},
	} {
		u, ok, err := a.AuthenticateRequest(r.r)
		if ok || err != nil {
			t.Fatalf("%s: ok=%v err=%v user=%+v, want no credential", name, ok, err, u)
		}
	}
}

// httptestRequest wraps a request so that a map literal can hold them.
type httptestRequest struct{ r *http.Request }

func TestCertAuthenticatorIntermediate(t *testing.T) {
	root := newTestCA(t, "root")
	mid := root.intermediate(t, "intermediate")
	leaf := mid.issue(t, clientTemplate("bob", "devs"))
	a := NewCertAuthenticator(root.pool(), 0)
	if _, ok, err := a.AuthenticateRequest(certRequest(leaf)); ok || err == nil {
		t.Fatalf("leaf without its intermediate: ok=%v err=%v", ok, err)
	}
	u, ok, err := a.AuthenticateRequest(certRequest(leaf, mid.cert))
	if !ok || err != nil || u.Name != "bob" {
		t.Fatalf("leaf with its intermediate: %+v ok=%v err=%v", u, ok, err)
	}
}

func TestCertAuthenticatorUID(t *testing.T) {
	ca := newTestCA(t, "ca")
	a := NewCertAuthenticator(ca.pool(), 0)
	withUID := clientTemplate("carol", "devs")
	withUID.Subject.ExtraNames = []pkix.AttributeTypeAndValue{{Type: uidOID, Value: "uid-123"}}
	u, ok, err := a.AuthenticateRequest(certRequest(ca.issue(t, withUID)))
	if !ok || err != nil || u.UID != "uid-123" || u.Name != "carol" {
		t.Fatalf("certificate with a UID: %+v ok=%v err=%v", u, ok, err)
	}
	twoUIDs := clientTemplate("carol")
	twoUIDs.Subject.ExtraNames = []pkix.AttributeTypeAndValue{{Type: uidOID, Value: "a"}, {Type: uidOID, Value: "b"}}
	if _, ok, err := a.AuthenticateRequest(certRequest(ca.issue(t, twoUIDs))); ok || err == nil || !strings.Contains(err.Error(), "more than one UID") {
		t.Fatalf("certificate with two UIDs: ok=%v err=%v", ok, err)
	}
}

// The cache and a connection's memo honour expiry: a certificate accepted
// (and remembered) while valid is refused from the moment it expires, and
// a refusal of a certificate that is not yet valid is forgotten after
// NegativeVerifyTTL.
func TestCertCacheHonoursExpiry(t *testing.T) {
	for _, conn := range []struct {
		name string
		ctx  context.Context
	}{
		{"cache", context.Background()},
		{"connection memo", WithConnectionMemo(context.Background(), nil)},
	} {
		t.Run(conn.name, func(t *testing.T) {
			ca := newTestCA(t, "ca")
			clock := &fakeClock{now: time.Now()}
			a := newCertAuthenticator(ca.pool(), 16, clock.Now)
			request := func(c *x509.Certificate) *http.Request { return certRequest(c).WithContext(conn.ctx) }

			cert := ca.issue(t, clientTemplate("dave"))
			if _, ok, err := a.AuthenticateRequest(request(cert)); !ok || err != nil {
				t.Fatalf("valid certificate: ok=%v err=%v", ok, err)
			}
			clock.Set(cert.NotAfter.Add(time.Second))
			if _, ok, err := a.AuthenticateRequest(request(cert)); ok || err == nil || !strings.Contains(err.Error(), "expired") {
				t.Fatalf("certificate after its expiry: ok=%v err=%v", ok, err)
			}

			clock.Set(time.Now())
			early := clientTemplate("erin")
			early.NotBefore = clock.Now().Add(5 * time.Second)
			future := ca.issue(t, early)
			if _, ok, err := a.AuthenticateRequest(request(future)); ok || err == nil {
				t.Fatalf("certificate before its NotBefore: ok=%v err=%v", ok, err)
			}
			clock.Set(clock.Now().Add(NegativeVerifyTTL + time.Second))
			if u, ok, err := a.AuthenticateRequest(request(future)); !ok || err != nil || u.Name != "erin" {
				t.Fatalf("certificate once valid: %+v ok=%v err=%v", u, ok, err)
			}
		})
	}
}

func TestCertCacheIsBounded(t *testing.T) {
	ca := newTestCA(t, "ca")
	a := NewCertAuthenticator(ca.pool(), 4)
	for i := range 10 {
		if _, ok, err := a.AuthenticateRequest(certRequest(ca.issue(t, clientTemplate("u")))); !ok || err != nil {
			t.Fatalf("certificate %d: ok=%v err=%v", i, ok, err)
		}
	}
	if n := len(a.cache.lru.Keys()); n != 4 {
		t.Fatalf("cache holds %d entries, want its bound 4", n)
	}
}
