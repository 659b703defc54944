package server

import (
	"crypto/tls"
	"fmt"
	"path/filepath"

	"github.com/leasehold/leasehold/internal/pki"
)

// setupTLS loads the CA and the serving pair and returns the server's TLS
// configuration. The serving pair is --tls-cert-file's when given; else,
// with a shared CA directory, the pair made there (apiserver.crt,
// apiserver.key) when it covers this replica's bind address and SANs; else
// one issued by the CA into DataDir for them.
func setupTLS(cfg Config) (*tls.Config, *pki.CA, error) {
	ca, err := loadCA(cfg)
	if err != nil {
		return nil, nil, err
	}
	certFile, keyFile := cfg.TLSCertFile, cfg.TLSPrivateKey
	if certFile == "" {
		if certFile, keyFile, err = servingPair(ca, cfg); err != nil {
			return nil, nil, fmt.Errorf("serving certificate: %w", err)
		}
	}
	tc, err := ca.ServerTLSConfig(certFile, keyFile, cfg.ClientCAFile)
	if err != nil {
		return nil, nil, fmt.Errorf("TLS config: %w", err)
	}
	return tc, ca, nil
}

func loadCA(cfg Config) (*pki.CA, error) {
	if cfg.Trust.CADir == "" {
		ca, err := pki.EnsureCA(cfg.DataDir)
		if err != nil {
			return nil, fmt.Errorf("certificate authority: %w", err)
		}
		return ca, nil
	}
	ca, err := pki.LoadCA(cfg.Trust.CADir)
	if err != nil {
		return nil, fmt.Errorf("shared certificate authority (create it once with `leasehold credentials init --dir %s`): %w", cfg.Trust.CADir, err)
	}
	return ca, nil
}

func servingPair(ca *pki.CA, cfg Config) (certFile, keyFile string, err error) {
	hosts := append([]string{cfg.BindAddress}, cfg.Trust.SANs...)
	if cfg.Trust.CADir != "" {
		certFile = filepath.Join(cfg.Trust.CADir, pki.ServingCertFile)
		keyFile = filepath.Join(cfg.Trust.CADir, pki.ServingKeyFile)
		if ca.ServingCertCovers(certFile, keyFile, hosts) {
			return certFile, keyFile, nil
		}
		cfg.Logger.Info("the shared serving certificate is missing or does not cover this replica: issuing one from the shared CA",
			"caDir", cfg.Trust.CADir, "hosts", hosts, "dataDir", cfg.DataDir)
	}
	return ca.EnsureServingCert(cfg.DataDir, hosts)
}
