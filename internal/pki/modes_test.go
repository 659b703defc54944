package pki

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Key files left group- or world-readable (an older version, a restored
// backup, cp without -p) are restricted to 0600 when reused on start.
func TestReusedKeyFilesAreRestrictedTo0600(t *testing.T) {
	dir := t.TempDir()
	ca := mustCA(t, dir)
	if _, _, err := ca.EnsureServingCert(dir, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.EnsureAdminKubeconfig(dir, "https://127.0.0.1:6443"); err != nil {
		t.Fatal(err)
	}
	keys := []string{CAKeyFile, ServingKeyFile, AdminKubeconfigFile}
	for _, name := range keys {
		assertMode(t, filepath.Join(dir, name), 0o600)
		if err := os.Chmod(filepath.Join(dir, name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := mustRead(t, filepath.Join(dir, ServingKeyFile))

	ca, err := EnsureCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ca.EnsureServingCert(dir, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.EnsureAdminKubeconfig(dir, "https://127.0.0.1:6443"); err != nil {
		t.Fatal(err)
	}
	for _, name := range keys {
		assertMode(t, filepath.Join(dir, name), 0o600)
	}
	if string(mustRead(t, filepath.Join(dir, ServingKeyFile))) != string(before) {
		t.Fatalf("the serving key was reissued; only its mode should change")
	}
}

func TestLoadCANeverCreatesOne(t *testing.T) {
	dir := t.TempDir()
	_, err := LoadCA(dir)
	if err == nil || !strings.Contains(err.Error(), "no CA in "+dir) {
		t.Fatalf("LoadCA on an empty directory: got %v, want a missing-CA error", err)
	}
	if ok, _ := fileExists(filepath.Join(dir, CACertFile)); ok {
		t.Fatalf("LoadCA created a CA")
	}
	want := mustCA(t, dir)
	if err := os.Chmod(filepath.Join(dir, CAKeyFile), 0o640); err != nil {
		t.Fatal(err)
	}
	got, err := LoadCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Cert().Equal(want.Cert()) {
		t.Fatalf("LoadCA loaded another CA")
	}
	assertMode(t, filepath.Join(dir, CAKeyFile), 0o600)
}
