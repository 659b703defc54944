package pki

import (
	"bytes"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func TestEnsureAdminKubeconfigReuseAndRewrite(t *testing.T) {
	dir := t.TempDir()
	ca := mustCA(t, dir)

	path, err := ca.EnsureAdminKubeconfig(dir, "https://127.0.0.1:6443")
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, AdminKubeconfigFile) {
		t.Fatalf("admin kubeconfig at %s", path)
	}
	first := mustRead(t, path)

	if _, err := ca.EnsureAdminKubeconfig(dir, "https://127.0.0.1:6443"); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mustRead(t, path), first) {
		t.Fatalf("unchanged admin kubeconfig was rewritten")
	}

	if _, err := ca.EnsureAdminKubeconfig(dir, "https://127.0.0.1:40001"); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext != KubeconfigClusterName {
		t.Fatalf("current context %q, want %q", cfg.CurrentContext, KubeconfigClusterName)
	}
	if got := cfg.Clusters[KubeconfigClusterName].Server; got != "https://127.0.0.1:40001" {
		t.Fatalf("server %q after URL change, want the new URL", got)
	}
	if cfg.Contexts[KubeconfigClusterName].AuthInfo != AdminUser || cfg.AuthInfos[AdminUser] == nil {
		t.Fatalf("context does not use user %s: %+v", AdminUser, cfg.Contexts[KubeconfigClusterName])
	}

	// A kubeconfig left over from another CA (data directory partly
	// replaced) must be rewritten even though the URL is the same.
	other := mustCA(t, t.TempDir())
	stale, err := other.EnsureAdminKubeconfig(t.TempDir(), "https://127.0.0.1:40001")
	if err != nil {
		t.Fatal(err)
	}
	mustCopy(t, stale, path)
	if _, err := ca.EnsureAdminKubeconfig(dir, "https://127.0.0.1:40001"); err != nil {
		t.Fatal(err)
	}
	cfg, err = clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(cfg.Clusters[KubeconfigClusterName].CertificateAuthorityData, ca.CertPEM()) {
		t.Fatalf("admin kubeconfig from another CA was kept")
	}
	if !ca.adminKubeconfigReusable(path, "https://127.0.0.1:40001") {
		t.Fatalf("rewritten admin kubeconfig is not acceptable itself")
	}
}
