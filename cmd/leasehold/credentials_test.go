package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/leasehold/leasehold/internal/authn"
	"github.com/leasehold/leasehold/internal/pki"
)

// runLeasehold runs the binary's root command with args, as main does.
func runLeasehold(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err = root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// loadClientCert reads the kubeconfig at path as client-go does and returns
// its client certificate.
func loadClientCert(t *testing.T, path string) (*rest.Config, *x509.Certificate) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("client-go cannot load %s: %v", path, err)
	}
	block, _ := pem.Decode(cfg.TLSClientConfig.CertData)
	if block == nil {
		t.Fatalf("%s holds no client certificate", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, cert
}

func TestCredentialsNodeAndUser(t *testing.T) {
	dataDir := t.TempDir()
	ca, err := pki.EnsureCA(dataDir) // as `serve` does on first start
	if err != nil {
		t.Fatal(err)
	}
	url := startWhoamiServer(t, ca, dataDir)

	_, stderr, err := runLeasehold(t, "credentials", "node", "node-1", "--data-dir", dataDir, "--server", url, "--expiration", "2h")
	if err != nil {
		t.Fatal(err)
	}
	nodePath := filepath.Join(dataDir, "node-node-1.kubeconfig")
	if !strings.Contains(stderr, "wrote "+nodePath) {
		t.Fatalf("stderr does not name the file: %q", stderr)
	}
	assertFileMode(t, nodePath, 0o600)
	cfg, cert := loadClientCert(t, nodePath)
	if cfg.Host != url {
		t.Fatalf("kubeconfig server %q, want %q", cfg.Host, url)
	}
	if cert.Subject.CommonName != "system:node:node-1" || !slices.Equal(cert.Subject.Organization, []string{"system:nodes"}) {
		t.Fatalf("node certificate subject %s", cert.Subject)
	}
	if left := time.Until(cert.NotAfter); left > 2*time.Hour || left < 2*time.Hour-time.Minute {
		t.Fatalf("node certificate valid for %s, want 2h", left)
	}
	if got := whoami(t, cfg); got.Name != "system:node:node-1" || !slices.Equal(got.Groups, []string{"system:nodes", "system:authenticated"}) {
		t.Fatalf("server saw %+v", got)
	}

	userPath := filepath.Join(t.TempDir(), "alice.kubeconfig")
	if err := os.WriteFile(userPath, []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runLeasehold(t, "credentials", "user", "alice", "--group", "devs", "--group", "a,b",
		"--data-dir", dataDir, "--server", url, "--out", userPath); err != nil {
		t.Fatal(err)
	}
	assertFileMode(t, userPath, 0o600) // replaced, not rewritten in place
	cfg, cert = loadClientCert(t, userPath)
	groups := slices.Sorted(slices.Values(cert.Subject.Organization))
	if cert.Subject.CommonName != "alice" || !slices.Equal(groups, []string{"a,b", "devs"}) {
		t.Fatalf("user certificate subject %s", cert.Subject)
	}
	if left := time.Until(cert.NotAfter); left < 8760*time.Hour-time.Minute || left > 8760*time.Hour {
		t.Fatalf("default expiration gave %s, want 8760h", left)
	}
	if got := whoami(t, cfg); got.Name != "alice" {
		t.Fatalf("server saw %+v", got)
	}
}

func TestCredentialsToStdout(t *testing.T) {
	dataDir := t.TempDir()
	if _, err := pki.EnsureCA(dataDir); err != nil {
		t.Fatal(err)
	}
	stdout, _, err := runLeasehold(t, "credentials", "user", "bob", "--data-dir", dataDir, "--out", "-")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load([]byte(stdout))
	if err != nil {
		t.Fatalf("standard output is not a kubeconfig: %v", err)
	}
	if cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster].Server != "https://127.0.0.1:6443" {
		t.Fatalf("default server not used: %+v", cfg.Clusters)
	}
	if entries, _ := os.ReadDir(dataDir); len(entries) != 2 { // ca.crt, ca.key
		t.Fatalf("--out - also wrote a file: %v", entries)
	}
}

func TestCredentialsRefusals(t *testing.T) {
	dataDir := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"node", "n1"}, "no CA in " + dataDir},
		{[]string{"node", "Bad_Name"}, `invalid node name "Bad_Name"`},
		{[]string{"user", "u", "--group", ""}, "a --group is empty"},
		{[]string{"user", "u", "--expiration", "-1h"}, "--expiration -1h0m0s is not positive"},
		{[]string{"node"}, "accepts 1 arg(s), received 0"},
	}
	for _, tc := range cases {
		args := append([]string{"credentials"}, tc.args...)
		args = append(args, "--data-dir", dataDir)
		_, _, err := runLeasehold(t, args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.args, err, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dataDir); len(entries) != 0 {
		t.Fatalf("refused commands left files: %v", entries)
	}
}

// identity is what the whoami server answers.
type identity struct {
	Name   string   `json:"name"`
	Groups []string `json:"groups"`
}

// startWhoamiServer serves, over the server's TLS configuration and
// authenticator, the identity of each caller on a free 127.0.0.1 port.
func startWhoamiServer(t *testing.T, ca *pki.CA, dataDir string) string {
	t.Helper()
	certFile, keyFile, err := ca.EnsureServingCert(dataDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	tlsConfig, err := ca.ServerTLSConfig(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	chain, err := authn.New(authn.Config{ClientCAs: tlsConfig.ClientCAs})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u, ok, err := chain.AuthenticateRequest(r)
			if !ok {
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				t.Logf("unauthenticated: %v", err)
				return
			}
			_ = json.NewEncoder(w).Encode(identity{Name: u.Name, Groups: u.Groups})
		}),
	}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("server stopped with %v", err)
		}
	})
	return "https://" + ln.Addr().String()
}

// whoami asks the whoami server who cfg's credentials are.
func whoami(t *testing.T, cfg *rest.Config) identity {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/whoami", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("whoami: HTTP %d", resp.StatusCode)
	}
	var id identity
	if err := json.NewDecoder(resp.Body).Decode(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

func assertFileMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != want {
		t.Fatalf("%s has mode %o, want %o", path, got, want)
	}
}

// TestCredentialsInitOffersOnlyItsFlags: init writes no kubeconfig, so it
// neither lists nor accepts the flags of the kubeconfig node and user write.
func TestCredentialsInitOffersOnlyItsFlags(t *testing.T) {
	_, help, err := runLeasehold(t, "credentials", "init", "--help")
	if err != nil {
		t.Fatal(err)
	}
	stdout, _, _ := runLeasehold(t, "credentials", "init", "--help")
	help += stdout
	_, flags, ok := strings.Cut(help, "Flags:")
	if !ok {
		t.Fatalf("credentials init --help has no Flags section:\n%s", help)
	}
	help = flags
	for _, flag := range []string{"--data-dir", "--server", "--out", "--expiration"} {
		if strings.Contains(help, flag) {
			t.Errorf("credentials init --help offers %s, which init ignores:\n%s", flag, help)
		}
	}
	if !strings.Contains(help, "--san") {
		t.Errorf("credentials init --help lacks --san:\n%s", help)
	}
	_, _, err = runLeasehold(t, "credentials", "init", "--dir", t.TempDir(), "--server", "https://x:6443")
	if err == nil || !strings.Contains(err.Error(), "unknown flag: --server") {
		t.Fatalf("credentials init --server: error %v, want unknown flag", err)
	}
	_, nodeHelp, _ := runLeasehold(t, "credentials", "node", "--help")
	nodeOut, _, _ := runLeasehold(t, "credentials", "node", "--help")
	if !strings.Contains(nodeHelp+nodeOut, "--expiration") {
		t.Errorf("credentials node --help lacks --expiration")
	}
}
