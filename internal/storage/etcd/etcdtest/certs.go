package etcdtest

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/pki"
)

// issueCerts makes a CA and a client certificate in a temporary directory,
// with the project's own pki package (the same code that secures serve).
func issueCerts(t testing.TB) Server {
	t.Helper()
	dir := t.TempDir()
	ca, err := pki.EnsureCA(dir)
	if err != nil {
		t.Fatalf("etcd test CA: %v", err)
	}
	certPEM, keyPEM, err := ca.IssueClientCert("leasehold-etcd-client", nil, time.Hour)
	if err != nil {
		t.Fatalf("etcd client certificate: %v", err)
	}
	srv := Server{
		CAFile:   filepath.Join(dir, pki.CACertFile),
		CertFile: filepath.Join(dir, "client.crt"),
		KeyFile:  filepath.Join(dir, "client.key"),
	}
	for path, data := range map[string][]byte{srv.CertFile: certPEM, srv.KeyFile: keyPEM} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatalf("writing %s: %v", path, err)
		}
	}
	return srv
}

// serverCertFiles issues etcd's serving certificate for 127.0.0.1 from the
// CA next to srv.CAFile.
func serverCertFiles(t testing.TB, srv Server) (certFile, keyFile string) {
	t.Helper()
	dir := filepath.Dir(srv.CAFile)
	ca, err := pki.EnsureCA(dir)
	if err != nil {
		t.Fatalf("etcd test CA: %v", err)
	}
	certFile, keyFile, err = ca.EnsureServingCert(dir, nil)
	if err != nil {
		t.Fatalf("etcd serving certificate: %v", err)
	}
	return certFile, keyFile
}
