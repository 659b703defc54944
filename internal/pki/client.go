package pki

import (
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
// The certificate never outlives the CA: a longer validity is cut at the
// CA's expiry, as Kubernetes' CSR signer does.
func (ca *CA) IssueClientCert(user string, groups []string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	_, certPEM, keyPEM, err = ca.issueClientCert(user, groups, validity)
	return certPEM, keyPEM, err
}

func (ca *CA) issueClientCert(user string, groups []string, validity time.Duration) (cert *x509.Certificate, certPEM, keyPEM []byte, err error) {
	if user == "" {
		return nil, nil, nil, errors.New("issue client certificate: user name is empty")
	}
	if validity <= 0 {
		return nil, nil, nil, fmt.Errorf("issue client certificate for %q: validity %s is not positive", user, validity)
	}
	key, err := newKey()
	if err != nil {
		return nil, nil, nil, err
	}
	now := time.Now()
	notAfter := now.Add(validity)
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		Subject: pkix.Name{
			CommonName:   user,
			Organization: slices.Clone(groups),
		},
		NotBefore:             now.Add(-backdate),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	cert, err = ca.sign(tmpl, key.Public())
	if err != nil {
		return nil, nil, nil, fmt.Errorf("issue client certificate: %w", err)
	}
	keyPEM, err = encodeKeyPEM(key)
	if err != nil {
		return nil, nil, nil, err
	}
	return cert, encodeCertPEM(cert.Raw), keyPEM, nil
}

// ClientKubeconfig mints a client certificate for user in groups, valid for
// validity (cut at the CA's expiry), and returns a kubeconfig for serverURL
// that carries it (see EncodeKubeconfig) and the certificate's expiry. The
// kubeconfig holds a private key: write it with mode 0600 (WriteFileAtomic).
func (ca *CA) ClientKubeconfig(serverURL, user string, groups []string, validity time.Duration) (kubeconfig []byte, notAfter time.Time, err error) {
	cert, certPEM, keyPEM, err := ca.issueClientCert(user, groups, validity)
	if err != nil {
		return nil, time.Time{}, err
	}
	kubeconfig, err = EncodeKubeconfig(serverURL, ca.certPEM, certPEM, keyPEM, user)
	if err != nil {
		return nil, time.Time{}, err
	}
	return kubeconfig, cert.NotAfter, nil
}

// UserFromCert maps a client certificate to a Kubernetes identity: the
// common name is the user and the organizations are the groups. It says
// nothing about whether the certificate is trusted.
func UserFromCert(cert *x509.Certificate) (name string, groups []string) {
	if cert == nil {
		return "", nil
	}
	return cert.Subject.CommonName, slices.Clone(cert.Subject.Organization)
}
