package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestRequestHeaderFlagsReplaceTheConfigMap: with --requestheader-client-ca-file
// (and the other --requestheader-* flags) the front proxy is judged by the
// flags alone, without reading the cluster's ConfigMap: here the cluster
// is not even reachable.
func TestRequestHeaderFlagsReplaceTheConfigMap(t *testing.T) {
	ca := newTestCA(t, "front-proxy-ca")
	dir := t.TempDir()
	caFile := filepath.Join(dir, "front-proxy-ca.crt")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	clientCA := filepath.Join(dir, "client-ca.crt")
	if err := os.WriteFile(clientCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: newTestCA(t, "client-ca").cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	unreachable, err := kubernetes.NewForConfig(&rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := newDelegatedAuthn(Config{
		ClientCAFile: clientCA,
		RequestHeader: RequestHeaderConfig{
			ClientCAFile: caFile, AllowedNames: []string{"aggregator"},
			UsernameHeaders: []string{"X-Who"}, GroupHeaders: []string{"X-Groups"}, ExtraHeaderPrefixes: []string{"X-Extra-"},
		},
	}, unreachable)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.prime(context.Background()); err != nil {
		t.Fatal(err)
	}
	r, _ := http.NewRequest(http.MethodGet, "https://leasehold/apis/coordination.k8s.io/v1/leases", nil)
	r.Header.Set("X-Who", "carol")
	r.Header.Add("X-Groups", "ops")
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{ca.client(t, "aggregator")}}
	u, ok, err := d.AuthenticateRequest(r)
	if err != nil || !ok || u.Name != "carol" || len(u.Groups) != 1 || u.Groups[0] != "ops" {
		t.Errorf("front proxy by the flags' headers: %+v ok=%v err=%v, want carol in ops", u, ok, err)
	}
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{ca.client(t, "front-proxy-client")}}
	if _, ok, err := d.AuthenticateRequest(r); ok || err == nil {
		t.Errorf("a name --requestheader-allowed-names does not list: ok=%v err=%v", ok, err)
	}
}
