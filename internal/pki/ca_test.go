package pki

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnsureCAGeneratesThenReuses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data") // does not exist yet
	ca1, err := EnsureCA(dir)
	if err != nil {
		t.Fatalf("first EnsureCA: %v", err)
	}
	certBytes := mustRead(t, filepath.Join(dir, CACertFile))
	keyBytes := mustRead(t, filepath.Join(dir, CAKeyFile))
	assertMode(t, filepath.Join(dir, CAKeyFile), 0o600)
	if !bytes.Equal(certBytes, ca1.CertPEM()) {
		t.Fatalf("ca.crt on disk differs from CA.CertPEM()")
	}
	if !ca1.Cert().IsCA {
		t.Fatalf("generated certificate is not a CA")
	}

	ca2, err := EnsureCA(dir)
	if err != nil {
		t.Fatalf("second EnsureCA: %v", err)
	}
	if !bytes.Equal(ca2.CertPEM(), ca1.CertPEM()) {
		t.Fatalf("second start produced a different CA certificate")
	}
	if !bytes.Equal(mustRead(t, filepath.Join(dir, CACertFile)), certBytes) ||
		!bytes.Equal(mustRead(t, filepath.Join(dir, CAKeyFile)), keyBytes) {
		t.Fatalf("second start rewrote the CA files")
	}
	if !publicKeysEqual(ca2.key.Public(), ca1.key.Public()) {
		t.Fatalf("second start loaded a different CA key")
	}
}

func TestEnsureCAKeyWithoutCertIsRegenerated(t *testing.T) {
	dir := t.TempDir()
	if _, err := EnsureCA(dir); err != nil {
		t.Fatal(err)
	}
	oldKey := mustRead(t, filepath.Join(dir, CAKeyFile))
	// Simulates a crash after the key was written but before the cert was.
	if err := os.Remove(filepath.Join(dir, CACertFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureCA(dir); err != nil {
		t.Fatalf("EnsureCA after half-written CA: %v", err)
	}
	if bytes.Equal(mustRead(t, filepath.Join(dir, CAKeyFile)), oldKey) {
		t.Fatalf("orphaned key was kept instead of regenerating the CA")
	}
}

func TestEnsureCARefusesCertWithoutKey(t *testing.T) {
	dir := t.TempDir()
	if _, err := EnsureCA(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, CAKeyFile)); err != nil {
		t.Fatal(err)
	}
	_, err := EnsureCA(dir)
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("EnsureCA with a certificate but no key: got %v, want an error about the missing key", err)
	}
}

func TestEnsureCARejectsMismatchedKey(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	if _, err := EnsureCA(dirA); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureCA(dirB); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dirA, CAKeyFile), mustRead(t, filepath.Join(dirB, CAKeyFile)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := EnsureCA(dirA)
	if err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("EnsureCA with another CA's key: got %v, want a mismatch error", err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != want {
		t.Fatalf("%s has mode %o, want %o", path, got, want)
	}
}
