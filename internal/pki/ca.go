package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// File names inside the data directory.
const (
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"
)

// Lifetimes of the material this package issues.
const (
	// CAValidity is long because replacing the CA invalidates every
	// kubeconfig ever handed out.
	CAValidity = 10 * 365 * 24 * time.Hour
	// LeafValidity is the lifetime of serving and admin certificates; they
	// are reissued automatically on start, so a year is plenty.
	LeafValidity = 365 * 24 * time.Hour
	// RenewBefore is how much remaining validity reused material must have;
	// anything closer to expiry is reissued on start.
	RenewBefore = 24 * time.Hour
	// backdate moves NotBefore into the past so that clients whose clock is
	// slightly behind the server's accept a freshly issued certificate.
	backdate = 5 * time.Minute
)

// CA is the cluster certificate authority. It is immutable after
// construction and safe for concurrent use.
type CA struct {
	cert    *x509.Certificate
	certPEM []byte
	key     crypto.Signer
}

// Cert returns the CA certificate.
func (ca *CA) Cert() *x509.Certificate { return ca.cert }

// CertPEM returns the PEM encoding of the CA certificate, as embedded in
// kubeconfigs (certificate-authority-data).
func (ca *CA) CertPEM() []byte { return append([]byte(nil), ca.certPEM...) }

// Pool returns a new certificate pool holding only the CA certificate.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return pool
}

// EnsureCA loads the CA from dir (ca.crt and ca.key), generating a new
// ECDSA P-256 CA there on first start. dir is created (0700) if needed.
//
// The key is written before the certificate. So a crash between the two
// writes leaves a key with no certificate, which nobody can have trusted
// yet and is safely regenerated; a certificate without its key, by
// contrast, may already be trusted by clients and is reported as an error
// rather than silently replaced.
func EnsureCA(dir string) (*CA, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create pki directory %s: %w", dir, err)
	}
	certPath := filepath.Join(dir, CACertFile)
	keyPath := filepath.Join(dir, CAKeyFile)

	haveCert, err := fileExists(certPath)
	if err != nil {
		return nil, err
	}
	haveKey, err := fileExists(keyPath)
	if err != nil {
		return nil, err
	}
	switch {
	case haveCert && haveKey:
		return loadCA(certPath, keyPath)
	case haveCert:
		return nil, fmt.Errorf("CA certificate %s exists but its key %s is missing; restore the key or remove both to generate a new CA", certPath, keyPath)
	default:
		return generateCA(certPath, keyPath)
	}
}

// LoadCA loads the CA that EnsureCA keeps in dir, without ever creating
// one: tools that issue credentials for a running server must sign with the
// server's own CA, and a CA made up in the wrong directory would only give
// credentials the server refuses.
func LoadCA(dir string) (*CA, error) {
	certPath := filepath.Join(dir, CACertFile)
	keyPath := filepath.Join(dir, CAKeyFile)
	for _, p := range []string{certPath, keyPath} {
		ok, err := fileExists(p)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("no CA in %s: %s does not exist (the server creates its CA there on first start)", dir, p)
		}
	}
	return loadCA(certPath, keyPath)
}

// loadCA reads and checks an existing CA pair.
func loadCA(certPath, keyPath string) (*CA, error) {
	if err := restrictKeyMode(keyPath); err != nil {
		return nil, err
	}
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("read CA certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("read CA key: %w", err)
	}
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("CA certificate %s: %w", certPath, err)
	}
	key, err := parseKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("CA key %s: %w", keyPath, err)
	}
	if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, fmt.Errorf("certificate %s is not a CA certificate", certPath)
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, fmt.Errorf("CA key %s does not match certificate %s", keyPath, certPath)
	}
	if time.Now().After(cert.NotAfter) {
		return nil, fmt.Errorf("CA certificate %s expired at %s", certPath, cert.NotAfter.Format(time.RFC3339))
	}
	return &CA{cert: cert, certPEM: encodeCertPEM(cert.Raw), key: key}, nil
}

// generateCA creates a self-signed CA and writes it (key first, see EnsureCA).
func generateCA(certPath, keyPath string) (*CA, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		// The serial in the name keeps CAs created in the same second
		// distinct, so pools holding several of them never confuse issuers.
		Subject:               pkix.Name{CommonName: fmt.Sprintf("leasehold-ca@%d-%08x", now.Unix(), serial.Uint64()&0xffffffff)},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true, // we only ever sign leaves
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse generated CA certificate: %w", err)
	}
	keyPEM, err := encodeKeyPEM(key)
	if err != nil {
		return nil, err
	}
	if err := WriteFileAtomic(keyPath, keyPEM, 0o600); err != nil {
		return nil, fmt.Errorf("write CA key: %w", err)
	}
	certPEM := encodeCertPEM(der)
	if err := WriteFileAtomic(certPath, certPEM, 0o644); err != nil {
		return nil, fmt.Errorf("write CA certificate: %w", err)
	}
	return &CA{cert: cert, certPEM: certPEM, key: key}, nil
}

// sign issues a certificate from tmpl for pub, filling in the serial number
// when the template has none.
func (ca *CA) sign(tmpl *x509.Certificate, pub crypto.PublicKey) (*x509.Certificate, error) {
	if tmpl.SerialNumber == nil {
		serial, err := newSerial()
		if err != nil {
			return nil, err
		}
		tmpl.SerialNumber = serial
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, pub, ca.key)
	if err != nil {
		return nil, fmt.Errorf("sign certificate for %q: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse issued certificate: %w", err)
	}
	return cert, nil
}

// verifyLeaf reports whether cert chains to this CA for the given usage and
// stays valid for at least RenewBefore.
func (ca *CA) verifyLeaf(cert *x509.Certificate, usage x509.ExtKeyUsage) error {
	if _, err := cert.Verify(x509.VerifyOptions{
		Roots:     ca.Pool(),
		KeyUsages: []x509.ExtKeyUsage{usage},
	}); err != nil {
		return fmt.Errorf("not valid under the current CA: %w", err)
	}
	if left := time.Until(cert.NotAfter); left < RenewBefore {
		return fmt.Errorf("expires at %s, less than %s away", cert.NotAfter.Format(time.RFC3339), RenewBefore)
	}
	return nil
}

// newKey generates an ECDSA P-256 private key.
func newKey() (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate ECDSA P-256 key: %w", err)
	}
	return key, nil
}

// newSerial returns a random positive 128-bit serial number, as RFC 5280
// recommends so that serials are unpredictable and never collide.
func newSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generate serial number: %w", err)
	}
	return serial.Add(serial, big.NewInt(1)), nil
}

// publicKeysEqual compares two public keys of any supported type.
func publicKeysEqual(a, b crypto.PublicKey) bool {
	ka, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	if !ok {
		return false
	}
	return ka.Equal(b)
}
