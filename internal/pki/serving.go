package pki

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"
)

// File names of the generated serving certificate inside the data directory.
const (
	ServingCertFile = "apiserver.crt"
	ServingKeyFile  = "apiserver.key"
)

// EnsureServingCert returns the paths of the API server's certificate and key
// in dir (apiserver.crt, apiserver.key), signed by ca, whose subject
// alternative names cover 127.0.0.1, ::1, localhost and every entry of hosts
// (IP addresses or DNS names). An existing pair is reused when it still
// chains to ca, is valid for more than RenewBefore, matches its key and
// covers every host; otherwise a new pair is issued. Unspecified addresses
// (0.0.0.0, ::) and empty strings in hosts are ignored: no client dials them,
// so they make no sense as names.
func (ca *CA) EnsureServingCert(dir string, hosts []string) (certFile, keyFile string, err error) {
	certFile = filepath.Join(dir, ServingCertFile)
	keyFile = filepath.Join(dir, ServingKeyFile)
	all := servingHosts(hosts)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("create pki directory %s: %w", dir, err)
	}

	if ca.servingCertReusable(certFile, keyFile, all) {
		if err := restrictKeyMode(keyFile); err != nil {
			return "", "", err
		}
		return certFile, keyFile, nil
	}
	if err := ca.issueServingCert(certFile, keyFile, all, time.Now(), LeafValidity); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// servingHosts merges the loopback names (always present so that the no-flag
// `leasehold serve` on 127.0.0.1 works with any local client) with hosts, dropping duplicates, empty
// strings and unspecified IPs, and keeping the order stable.
func servingHosts(hosts []string) []string {
	seen := make(map[string]bool)
	var out []string
	for _, h := range append([]string{"127.0.0.1", "::1", "localhost"}, hosts...) {
		if ip := net.ParseIP(h); ip != nil {
			if ip.IsUnspecified() {
				continue
			}
			h = ip.String() // canonical form, so "::0001" and "::1" collapse
		}
		if h == "" || seen[h] {
			continue
		}
		seen[h] = true
		out = append(out, h)
	}
	return out
}

// servingCertReusable reports whether the pair on disk can be served as is.
// Any problem (missing, unreadable, mismatched, expiring, wrong CA, missing
// SAN) means "reissue", never an error: the files are ours to regenerate.
func (ca *CA) servingCertReusable(certFile, keyFile string, hosts []string) bool {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return false
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return false
	}
	// X509KeyPair checks that the key belongs to the certificate, which
	// catches a crash between writing the two files.
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return false
	}
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		return false
	}
	if err := ca.verifyLeaf(cert, x509.ExtKeyUsageServerAuth); err != nil {
		return false
	}
	for _, h := range hosts {
		if cert.VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}

// issueServingCert writes a new serving pair valid from notBefore-backdate
// for validity. The key is written first; if we crash before the
// certificate is written the mismatch is detected and fixed on next start.
func (ca *CA) issueServingCert(certFile, keyFile string, hosts []string, notBefore time.Time, validity time.Duration) error {
	key, err := newKey()
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "leasehold-apiserver"},
		NotBefore:             notBefore.Add(-backdate),
		NotAfter:              notBefore.Add(validity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	cert, err := ca.sign(tmpl, key.Public())
	if err != nil {
		return fmt.Errorf("issue serving certificate: %w", err)
	}
	keyPEM, err := encodeKeyPEM(key)
	if err != nil {
		return err
	}
	if err := WriteFileAtomic(keyFile, keyPEM, 0o600); err != nil {
		return fmt.Errorf("write serving key: %w", err)
	}
	if err := WriteFileAtomic(certFile, encodeCertPEM(cert.Raw), 0o644); err != nil {
		return fmt.Errorf("write serving certificate: %w", err)
	}
	return nil
}
