package kubecluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certValidity is the lifetime of everything the harness issues: a test
// cluster lives minutes, a day leaves room for a slow machine.
const certValidity = 24 * time.Hour

// authority is one test CA: its certificate and key, in memory and as the
// files the Kubernetes flags name.
type authority struct {
	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	certPEM  []byte
	CertFile string
	KeyFile  string
}

// newAuthority creates a self-signed CA named cn and writes it to
// dir/name.crt and dir/name.key.
func newAuthority(dir, name, cn string) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("CA %s key: %w", name, err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour), // tolerate a clock behind ours
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("CA %s certificate: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("CA %s certificate: %w", name, err)
	}
	a := &authority{cert: cert, key: key, certPEM: pemBlock("CERTIFICATE", der),
		CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key")}
	keyPEM, err := keyToPEM(key)
	if err != nil {
		return nil, err
	}
	if err := writeFiles(a.CertFile, a.certPEM, a.KeyFile, keyPEM); err != nil {
		return nil, err
	}
	return a, nil
}

// leaf describes a certificate to issue.
type leaf struct {
	cn     string
	orgs   []string
	dns    []string
	ips    []net.IP
	usages []x509.ExtKeyUsage
}

// issue signs a new key pair for l and returns both as PEM.
func (a *authority) issue(l leaf) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("key for %s: %w", l.cn, err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: l.cn, Organization: l.orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  l.usages,
		DNSNames:     l.dns,
		IPAddresses:  l.ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, nil, fmt.Errorf("certificate for %s: %w", l.cn, err)
	}
	keyPEM, err = keyToPEM(key)
	if err != nil {
		return nil, nil, err
	}
	return pemBlock("CERTIFICATE", der), keyPEM, nil
}

// issueFiles issues l and writes it to dir/name.crt and dir/name.key.
func (a *authority) issueFiles(dir, name string, l leaf) (certFile, keyFile string, err error) {
	certPEM, keyPEM, err := a.issue(l)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	return certFile, keyFile, writeFiles(certFile, certPEM, keyFile, keyPEM)
}

// clientUsage and serverUsage are the extended key usages Kubernetes'
// verifiers check: client auth for x509 and request-header authentication,
// server auth for serving certificates.
var (
	clientUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	serverUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
)

// writeServiceAccountKeys writes an RSA key pair for signing service
// account tokens: the private key for kube-apiserver's
// --service-account-signing-key-file and kube-controller-manager's
// --service-account-private-key-file, the public key for
// --service-account-key-file. RSA (RS256) because that is what every
// Kubernetes installer uses; the harness should not be the first to
// exercise another algorithm.
func writeServiceAccountKeys(dir string) (privFile, pubFile string, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", fmt.Errorf("service account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", fmt.Errorf("service account public key: %w", err)
	}
	privFile, pubFile = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if err := os.WriteFile(privFile, pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key)), 0o600); err != nil {
		return "", "", fmt.Errorf("write %s: %w", privFile, err)
	}
	if err := os.WriteFile(pubFile, pemBlock("PUBLIC KEY", pub), 0o644); err != nil {
		return "", "", fmt.Errorf("write %s: %w", pubFile, err)
	}
	return privFile, pubFile, nil
}

func keyToPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode key: %w", err)
	}
	return pemBlock("PRIVATE KEY", der), nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func writeFiles(certFile string, certPEM []byte, keyFile string, keyPEM []byte) error {
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", certFile, err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", keyFile, err)
	}
	return nil
}

func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}
