package pki

import (
	"bytes"
	"crypto/x509"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestEnsureServingCertSANsAndReuse(t *testing.T) {
	dir := t.TempDir()
	ca := mustCA(t, dir)
	hosts := []string{"10.1.2.3", "api.example.test", "0.0.0.0", ""}
	certFile, keyFile, err := ca.EnsureServingCert(dir, hosts)
	if err != nil {
		t.Fatal(err)
	}
	assertMode(t, keyFile, 0o600)
	cert := mustParseCertFile(t, certFile)

	for _, h := range []string{"127.0.0.1", "::1", "localhost", "10.1.2.3", "api.example.test"} {
		if err := cert.VerifyHostname(h); err != nil {
			t.Errorf("serving certificate does not cover %q: %v", h, err)
		}
	}
	for _, ip := range cert.IPAddresses {
		if ip.IsUnspecified() {
			t.Errorf("serving certificate names the unspecified address %s", ip)
		}
	}
	if _, err := cert.Verify(x509.VerifyOptions{
		Roots:     ca.Pool(),
		DNSName:   "localhost",
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}); err != nil {
		t.Fatalf("serving certificate does not verify under the CA: %v", err)
	}

	before := mustRead(t, certFile)
	// A subset of the hosts (and the loopback defaults in another spelling)
	// is still covered, so the same pair must be reused.
	if _, _, err := ca.EnsureServingCert(dir, []string{"api.example.test", "::0001"}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mustRead(t, certFile), before) {
		t.Fatalf("a still-valid serving certificate covering all hosts was reissued")
	}
}

func TestEnsureServingCertReissues(t *testing.T) {
	cases := []struct {
		name    string
		prepare func(t *testing.T, ca *CA, dir string)
		hosts   []string
	}{
		{
			name:  "new host",
			hosts: []string{"192.0.2.7", "other.example.test"},
			prepare: func(t *testing.T, ca *CA, dir string) {
				if _, _, err := ca.EnsureServingCert(dir, []string{"192.0.2.7"}); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "expired",
			prepare: func(t *testing.T, ca *CA, dir string) {
				writeServingCert(t, ca, dir, time.Now().Add(-48*time.Hour), time.Hour)
			},
		},
		{
			name: "expires within a day",
			prepare: func(t *testing.T, ca *CA, dir string) {
				writeServingCert(t, ca, dir, time.Now(), 2*time.Hour)
			},
		},
		{
			name: "signed by another CA",
			prepare: func(t *testing.T, _ *CA, dir string) {
				other := mustCA(t, t.TempDir())
				writeServingCert(t, other, dir, time.Now(), LeafValidity)
			},
		},
		{
			name: "key does not match",
			prepare: func(t *testing.T, ca *CA, dir string) {
				writeServingCert(t, ca, dir, time.Now(), LeafValidity)
				spare := t.TempDir()
				writeServingCert(t, ca, spare, time.Now(), LeafValidity)
				mustCopy(t, filepath.Join(spare, ServingKeyFile), filepath.Join(dir, ServingKeyFile))
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ca := mustCA(t, dir)
			tc.prepare(t, ca, dir)
			before := mustRead(t, filepath.Join(dir, ServingCertFile))

			certFile, _, err := ca.EnsureServingCert(dir, tc.hosts)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(mustRead(t, certFile), before) {
				t.Fatalf("serving certificate was reused, want reissued")
			}
			if !ca.servingCertReusable(certFile, filepath.Join(dir, ServingKeyFile), servingHosts(tc.hosts)) {
				t.Fatalf("reissued serving certificate is not acceptable itself")
			}
			cert := mustParseCertFile(t, certFile)
			if left := time.Until(cert.NotAfter); left < LeafValidity-time.Hour {
				t.Fatalf("reissued certificate valid for only %s", left)
			}
		})
	}
}

func TestServingHostsCanonical(t *testing.T) {
	got := servingHosts([]string{"localhost", "::0001", "0:0:0:0:0:0:0:1", "::", "host.test", "host.test", "2001:db8::1"})
	want := []string{"127.0.0.1", "::1", "localhost", "host.test", "2001:db8::1"}
	if !slices.Equal(got, want) {
		t.Fatalf("servingHosts = %q, want %q", got, want)
	}
	if ip := net.ParseIP(got[4]); ip == nil {
		t.Fatalf("IPv6 host lost its form: %q", got[4])
	}
}

// writeServingCert writes a serving pair for the loopback names issued by ca
// at notBefore with the given validity, bypassing the reuse logic.
func writeServingCert(t *testing.T, ca *CA, dir string, notBefore time.Time, validity time.Duration) {
	t.Helper()
	err := ca.issueServingCert(filepath.Join(dir, ServingCertFile), filepath.Join(dir, ServingKeyFile),
		servingHosts(nil), notBefore, validity)
	if err != nil {
		t.Fatal(err)
	}
}

func mustCA(t *testing.T, dir string) *CA {
	t.Helper()
	ca, err := EnsureCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func mustParseCertFile(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	cert, err := parseCertPEM(mustRead(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func mustCopy(t *testing.T, from, to string) {
	t.Helper()
	if err := WriteFileAtomic(to, mustRead(t, from), 0o600); err != nil {
		t.Fatal(err)
	}
}
