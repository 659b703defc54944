package clients

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// python is Debian's interpreter, for which python3-kubernetes is built (a
// pyenv python3 earlier on PATH would not see the package).
const python = "/usr/bin/python3"

// needPython installs Debian's python3-kubernetes when missing (or skips
// loudly) and returns the directory of the Python scripts.
func needPython(t *testing.T) string {
	t.Helper()
	testdeps.Debian(t, "python3-kubernetes", "/usr/lib/python3/dist-packages/kubernetes/__init__.py")
	dir, err := filepath.Abs("python")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPython runs python/checks.py's checks, each named after what it
// covers, against one server (with a small watch cache, so that an old
// resourceVersion is soon 410 Gone).
func TestPython(t *testing.T) {
	dir := needPython(t)
	srv := testdeps.StartServer(t, leaseholdBinary, "--watch-cache-window", "20")
	cert, key := untrustedClientCert(t)
	env := []string{"KUBECONFIG=" + srv.Kubeconfig, "UNTRUSTED_CERT=" + cert, "UNTRUSTED_KEY=" + key, "PYTHONDONTWRITEBYTECODE=1"}
	runChecks(t, 2*time.Minute, dir, env, []string{"discovery", "lease_crud", "patches", "watch", "watch_gone",
		"watch_renewals", "nodes", "events", "untrusted_cert"}, python, "checks.py")
}

// TestPythonLeaderElection: the client's own leaderelection module, with
// its ConfigMapLock and with a Lease lock (python/leaselock.py), fails
// over when the leader is killed.
func TestPythonLeaderElection(t *testing.T) {
	dir := needPython(t)
	srv := testdeps.StartServer(t, leaseholdBinary)
	for _, lock := range []string{"configmap", "lease"} {
		t.Run(lock, func(t *testing.T) {
			testFailover(t, time.Minute, func(id string) *exec.Cmd {
				cmd := exec.Command(python, "elector.py", lock, "py-"+lock, id)
				cmd.Dir, cmd.Env = dir, append(os.Environ(), "KUBECONFIG="+srv.Kubeconfig, "PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1")
				return cmd
			})
		})
	}
}

// untrustedClientCert writes a self-signed client certificate (and its
// key) that no CA the server trusts has signed.
func untrustedClientCert(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "intruder", Organization: []string{"system:masters"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
