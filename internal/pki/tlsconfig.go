package pki

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// ServerTLSConfig returns the API server's TLS configuration: the key pair
// from certFile/keyFile (the generated pair or the user's
// --tls-cert-file/--tls-private-key-file), TLS 1.2 or later, ALPN for h2 and
// http/1.1, and client certificates requested but neither required nor
// verified in the handshake (tls.RequestClientCert), as kube-apiserver does.
//
// The authenticator (internal/authn) verifies the certificate against
// ClientCAPool(extraClientCAFiles...) for each request, so that health
// checks and bearer-token clients handshake without one, and a certificate
// from an unknown CA, or an expired one, gets a 401 with a Status body the
// client can show instead of a handshake failure. The pool here only tells
// clients which authorities are accepted (the CertificateRequest message).
func (ca *CA) ServerTLSConfig(certFile, keyFile string, extraClientCAFiles ...string) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load serving key pair %s, %s: %w", certFile, keyFile, err)
	}
	pool, err := ca.ClientCAPool(extraClientCAFiles...)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		Certificates: []tls.Certificate{pair},
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"h2", "http/1.1"},
		ClientAuth:   tls.RequestClientCert,
		ClientCAs:    pool,
	}, nil
}

// ClientCAPool returns the pool that client certificates are verified
// against: the CA plus every certificate of each extraClientCAFiles entry
// (--client-ca-file; empty entries are skipped).
func (ca *CA) ClientCAPool(extraClientCAFiles ...string) (*x509.CertPool, error) {
	pool := ca.Pool()
	for _, f := range extraClientCAFiles {
		if f == "" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read client CA file: %w", err)
		}
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("client CA file %s holds no PEM certificate", f)
		}
	}
	return pool, nil
}
