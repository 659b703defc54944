package pki

import (
	"crypto/x509"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

func TestClientKubeconfig(t *testing.T) {
	ca := mustCA(t, t.TempDir())
	data, notAfter, err := ca.ClientKubeconfig("https://10.0.0.1:6443", "alice", []string{"devs", "ops"}, 2*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Clusters[KubeconfigClusterName].Server; got != "https://10.0.0.1:6443" {
		t.Fatalf("server %q", got)
	}
	auth := cfg.AuthInfos["alice"]
	if auth == nil || cfg.Contexts[cfg.CurrentContext].AuthInfo != "alice" {
		t.Fatalf("current context does not use user alice: %+v", cfg.Contexts)
	}
	cert, err := parseCertPEM(auth.ClientCertificateData)
	if err != nil {
		t.Fatal(err)
	}
	name, groups := UserFromCert(cert)
	slices.Sort(groups) // a set in DER
	if name != "alice" || !slices.Equal(groups, []string{"devs", "ops"}) {
		t.Fatalf("certificate names %s in %q", name, groups)
	}
	if !cert.NotAfter.Equal(notAfter) {
		t.Fatalf("reported expiry %s, certificate says %s", notAfter, cert.NotAfter)
	}
	if d := time.Until(cert.NotAfter); d < 2*time.Hour-time.Minute || d > 2*time.Hour {
		t.Fatalf("certificate valid for %s, want 2h", d)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: ca.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("minted certificate does not verify for client auth: %v", err)
	}
}

func TestClientCertNeverOutlivesTheCA(t *testing.T) {
	ca := mustCA(t, t.TempDir())
	_, notAfter, err := ca.ClientKubeconfig("https://127.0.0.1:6443", "bob", nil, 2*CAValidity)
	if err != nil {
		t.Fatal(err)
	}
	if !notAfter.Equal(ca.Cert().NotAfter) {
		t.Fatalf("certificate expires %s, CA %s", notAfter, ca.Cert().NotAfter)
	}
	if _, _, err := ca.ClientKubeconfig("https://127.0.0.1:6443", "bob", nil, 0); err == nil {
		t.Fatalf("zero validity accepted")
	}
}
