package pki

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"slices"
	"time"
)

// IssueClientCert issues a client certificate for user (the subject's common
// name) in groups (the subject's organizations), the identity encoding
// Kubernetes uses for x509 client authentication. It returns the PEM
// certificate and PEM (PKCS #8) private key, ready for a kubeconfig.
// Groups are a set: DER encodes them sorted, so their order is not kept.
func (ca *CA) IssueClientCert(user string, groups []string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	if user == "" {
		return nil, nil, errors.New("issue client certificate: user name is empty")
	}
	if validity <= 0 {
		return nil, nil, fmt.Errorf("issue client certificate for %q: validity %s is not positive", user, validity)
	}
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		Subject: pkix.Name{
			CommonName:   user,
			Organization: slices.Clone(groups),
		},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	cert, err := ca.sign(tmpl, key.Public())
	if err != nil {
		return nil, nil, fmt.Errorf("issue client certificate: %w", err)
	}
	keyPEM, err = encodeKeyPEM(key)
	if err != nil {
		return nil, nil, err
	}
	return encodeCertPEM(cert.Raw), keyPEM, nil
}

// UserFromCert maps a verified client certificate to a Kubernetes identity:
// the common name is the user and the organizations are the groups. An
// empty name means the certificate carries no user and the request must be
// treated as unauthenticated, as kube-apiserver does. The caller must only
// pass certificates that were verified against a trusted CA.
func UserFromCert(cert *x509.Certificate) (name string, groups []string) {
	if cert == nil {
		return "", nil
	}
	return cert.Subject.CommonName, slices.Clone(cert.Subject.Organization)
}

// UserFromConnectionState returns the identity of the client certificate
// that the TLS handshake verified (the leaf of the first verified chain),
// and ok=false when the client sent no certificate or it carries no user.
// Using VerifiedChains rather than PeerCertificates guarantees that only
// certificates checked against the client CA pool are trusted.
func UserFromConnectionState(cs *tls.ConnectionState) (name string, groups []string, ok bool) {
	if cs == nil || len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return "", nil, false
	}
	name, groups = UserFromCert(cs.VerifiedChains[0][0])
	return name, groups, name != ""
}
