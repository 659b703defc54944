package pki

import (
	"crypto/tls"
	"fmt"
	"os"
)

// ServerTLSConfig returns the API server's TLS configuration: the key pair
// from certFile/keyFile (the generated pair or the user's
// --tls-cert-file/--tls-private-key-file), TLS 1.2 or later, ALPN for h2 and
// http/1.1, and client certificates verified against the CA plus the
// certificates of every extraClientCAFiles entry (--client-ca-file).
//
// Client certificates are optional (VerifyClientCertIfGiven): health checks
// and bearer-token clients handshake without one, and the API layer answers
// 401 when a request carries no identity. A certificate that is presented
// but not signed by a trusted CA fails the handshake.
func (ca *CA) ServerTLSConfig(certFile, keyFile string, extraClientCAFiles ...string) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load serving key pair %s, %s: %w", certFile, keyFile, err)
	}
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
	return &tls.Config{
		Certificates: []tls.Certificate{pair},
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"h2", "http/1.1"},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    pool,
	}, nil
}
