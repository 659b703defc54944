package pki

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/leasehold/leasehold/internal/authn"
)

// whoami is what the test server reports about each request.
type whoami struct {
	Proto         string   `json:"proto"`
	Authenticated bool     `json:"authenticated"`
	User          string   `json:"user"`
	Groups        []string `json:"groups"`
	Error         string   `json:"error"`
}

// startTLSServer serves whoami answers over cfg on a free 127.0.0.1 port,
// identifying callers by their client certificate verified against
// clientCAs as the API server does, and stops the server (and waits for it)
// when the test ends.
func startTLSServer(t *testing.T, cfg *tls.Config, clientCAs *x509.CertPool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	certs := authn.NewCertAuthenticator(clientCAs, 0)
	srv := &http.Server{
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          log.New(testLogWriter{t}, "server: ", 0),
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var ans whoami
			ans.Proto = r.Proto
			u, ok, err := certs.AuthenticateRequest(r)
			ans.User, ans.Groups, ans.Authenticated = u.Name, u.Groups, ok
			if err != nil {
				ans.Error = err.Error()
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(ans)
		}),
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(tls.NewListener(ln, cfg)) }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("server stopped with %v", err)
		}
	})
	return "https://" + ln.Addr().String()
}

// defaultServerTLS makes a data directory with a CA and serving
// certificate, as serve does with no flags, and returns its TLS config.
func defaultServerTLS(t *testing.T) (dir string, ca *CA, cfg *tls.Config) {
	t.Helper()
	dir = t.TempDir()
	ca = mustCA(t, dir)
	certFile, keyFile, err := ca.EnsureServingCert(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err = ca.ServerTLSConfig(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return dir, ca, cfg
}

// testLogWriter routes the server's error log (handshake failures) to the
// test log, where it shows only on failure or with -v.
type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// ask performs GET url with client and decodes the answer.
func ask(t *testing.T, client *http.Client, url string) (whoami, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/whoami", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return whoami{}, err
	}
	defer resp.Body.Close()
	var ans whoami
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		t.Fatalf("decode answer: %v", err)
	}
	if resp.ProtoMajor != 2 {
		t.Errorf("response over %s, want HTTP/2", resp.Proto)
	}
	return ans, nil
}

// kubeconfigClient builds an HTTP client from a kubeconfig exactly as
// client-go programs (and kubectl) do.
func kubeconfigClient(t *testing.T, path string) *http.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("load kubeconfig %s: %v", path, err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatalf("client from kubeconfig: %v", err)
	}
	t.Cleanup(client.CloseIdleConnections)
	return client
}

func TestKubeconfigClientsAuthenticateOverHTTP2(t *testing.T) {
	dir, ca, cfg := defaultServerTLS(t)
	url := startTLSServer(t, cfg, ca.Pool())

	adminPath, err := ca.EnsureAdminKubeconfig(dir, url)
	if err != nil {
		t.Fatal(err)
	}
	assertMode(t, adminPath, 0o600)
	ans, err := ask(t, kubeconfigClient(t, adminPath), url)
	if err != nil {
		t.Fatalf("admin request: %v", err)
	}
	if !ans.Authenticated || ans.User != AdminUser || !slices.Equal(ans.Groups, []string{AdminGroup}) {
		t.Fatalf("server saw %+v, want %s in [%s]", ans, AdminUser, AdminGroup)
	}

	// A minted node credential, as `serve` hands out for agents.
	certPEM, keyPEM, err := ca.IssueClientCert("system:node:n1", []string{"system:nodes", "extra"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	nodePath := filepath.Join(dir, "n1.kubeconfig")
	if err := WriteKubeconfig(nodePath, url, ca.CertPEM(), certPEM, keyPEM, "system:node:n1"); err != nil {
		t.Fatal(err)
	}
	assertMode(t, nodePath, 0o600)
	ans, err = ask(t, kubeconfigClient(t, nodePath), url)
	if err != nil {
		t.Fatalf("node request: %v", err)
	}
	slices.Sort(ans.Groups)
	if ans.User != "system:node:n1" || !slices.Equal(ans.Groups, []string{"extra", "system:nodes"}) {
		t.Fatalf("server saw %+v, want system:node:n1 in [system:nodes extra]", ans)
	}
}

func TestClientWithoutCertificateHandshakes(t *testing.T) {
	_, ca, cfg := defaultServerTLS(t)
	url := startTLSServer(t, cfg, ca.Pool())

	transport := &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2: true,
	}
	client := &http.Client{Transport: transport}
	defer client.CloseIdleConnections()
	ans, err := ask(t, client, url)
	if err != nil {
		t.Fatalf("request without a client certificate failed: %v", err)
	}
	if ans.Authenticated || ans.User != "" {
		t.Fatalf("anonymous request carried identity %+v", ans)
	}

	// A certificate from a CA the server does not trust is refused.
	stranger := mustCA(t, t.TempDir())
	strangerCert, strangerKey, err := stranger.IssueClientCert("mallory", []string{"system:masters"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mallory.kubeconfig")
	if err := WriteKubeconfig(path, url, ca.CertPEM(), strangerCert, strangerKey, "mallory"); err != nil {
		t.Fatal(err)
	}
	// The handshake succeeds (the server only requests certificates), and
	// the authenticator refuses the certificate, so the API can answer 401.
	ans, err = ask(t, kubeconfigClient(t, path), url)
	if err != nil {
		t.Fatalf("request with an untrusted certificate failed in TLS: %v", err)
	}
	if ans.Authenticated || !strings.Contains(ans.Error, "certificate signed by unknown authority") {
		t.Fatalf("certificate from an untrusted CA: server saw %+v, want an unknown-authority error", ans)
	}
}

func TestServerRefusesTLS11(t *testing.T) {
	_, ca, cfg := defaultServerTLS(t)
	if cfg.MinVersion != tls.VersionTLS12 || cfg.ClientAuth != tls.RequestClientCert {
		t.Fatalf("MinVersion %x ClientAuth %v, want TLS 1.2 and RequestClientCert", cfg.MinVersion, cfg.ClientAuth)
	}
	url := startTLSServer(t, cfg, ca.Pool())
	transport := &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: ca.Pool(), MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11,
	}}
	client := &http.Client{Transport: transport}
	defer client.CloseIdleConnections()
	resp, err := client.Get(url + "/whoami")
	if err == nil {
		resp.Body.Close()
		t.Fatalf("a TLS 1.1 client was served")
	}
	if !strings.Contains(err.Error(), "protocol version") {
		t.Fatalf("TLS 1.1 client: got %v, want a protocol version alert", err)
	}
}

func TestUserSuppliedServingCertAndExtraClientCA(t *testing.T) {
	dir := t.TempDir()
	ca := mustCA(t, dir)

	// The operator's own PKI provides both the serving pair
	// (--tls-cert-file/--tls-private-key-file) and an extra client CA
	// (--client-ca-file).
	opsDir := t.TempDir()
	ops := mustCA(t, opsDir)
	opsCert, opsKey, err := ops.EnsureServingCert(opsDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ca.ServerTLSConfig(opsCert, opsKey, "", filepath.Join(opsDir, CACertFile))
	if err != nil {
		t.Fatal(err)
	}
	pool, err := ca.ClientCAPool("", filepath.Join(opsDir, CACertFile))
	if err != nil {
		t.Fatal(err)
	}
	url := startTLSServer(t, cfg, pool)

	for _, issuer := range []*CA{ca, ops} {
		certPEM, keyPEM, err := issuer.IssueClientCert("alice", []string{"devs"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "alice.kubeconfig")
		// Clients trust the operator's CA, which signed the serving cert.
		if err := WriteKubeconfig(path, url, ops.CertPEM(), certPEM, keyPEM, "alice"); err != nil {
			t.Fatal(err)
		}
		ans, err := ask(t, kubeconfigClient(t, path), url)
		if err != nil {
			t.Fatalf("request with certificate from %s: %v", issuer.Cert().Subject.CommonName, err)
		}
		if ans.User != "alice" || !slices.Equal(ans.Groups, []string{"devs"}) {
			t.Fatalf("server saw %+v, want alice in [devs]", ans)
		}
	}

	if _, err := ca.ServerTLSConfig(opsCert, opsKey, opsKey); err == nil {
		t.Fatalf("a client CA file with no certificate was accepted")
	}
}
