package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Replicas started with one --ca-dir (made once by `leasehold credentials
// init`) are one server to their clients: each serves the shared
// certificate, which names the load balancer (--san), and accepts the
// kubeconfigs the others hand out, admin and minted ones alike. A replica
// with a CA of its own accepts none of them.
func TestReplicasShareTrust(t *testing.T) {
	const lb = "lb.leasehold.test"
	pkiDir := filepath.Join(t.TempDir(), "pki")
	if out, err := exec.Command(leaseholdBinary, "credentials", "init", "--dir", pkiDir, "--san", lb).CombinedOutput(); err != nil {
		t.Fatalf("credentials init: %v\n%s", err, out)
	}
	a := startServer(t, "--ca-dir", pkiDir, "--tls-san", lb)
	b := startServer(t, "--ca-dir", pkiDir, "--tls-san", lb)
	own := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	shared, err := os.ReadFile(filepath.Join(pkiDir, "apiserver.crt"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(shared)
	caPEM, err := os.ReadFile(filepath.Join(pkiDir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	for _, srv := range []*serverProc{a, b} {
		// The load balancer's name verifies against the shared CA.
		conn, err := tls.Dial("tcp", srv.Addr, &tls.Config{RootCAs: roots, ServerName: lb})
		if err != nil {
			t.Fatalf("TLS to %s as %s: %v", srv.Addr, lb, err)
		}
		if !bytes.Equal(conn.ConnectionState().PeerCertificates[0].Raw, block.Bytes) {
			t.Errorf("%s does not serve the shared certificate", srv.Addr)
		}
		_ = conn.Close()
		if conn, err := tls.Dial("tcp", srv.Addr, &tls.Config{RootCAs: roots, ServerName: "elsewhere.test"}); err == nil {
			_ = conn.Close()
			t.Errorf("%s's certificate verified for a name it was not given", srv.Addr)
		}
	}

	// A node credential minted from the shared CA, and each replica's
	// admin kubeconfig, work on every replica that shares it.
	nodeKubeconfig := filepath.Join(t.TempDir(), "node.kubeconfig")
	if out, err := exec.Command(leaseholdBinary, "credentials", "node", "node-1", "--data-dir", pkiDir,
		"--server", a.URL, "--out", nodeKubeconfig).CombinedOutput(); err != nil {
		t.Fatalf("credentials node: %v\n%s", err, out)
	}
	whoami := func(kubeconfig string, srv *serverProc) (string, error) {
		cfg, err := clientcmd.BuildConfigFromFlags(srv.URL, kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Timeout = 10 * time.Second
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		return r.Status.UserInfo.Username, nil
	}
	for _, tc := range []struct{ kubeconfig, user string }{
		{a.Kubeconfig, "leasehold-admin"}, {b.Kubeconfig, "leasehold-admin"}, {nodeKubeconfig, "system:node:node-1"},
	} {
		for _, srv := range []*serverProc{a, b} {
			if got, err := whoami(tc.kubeconfig, srv); err != nil || got != tc.user {
				t.Errorf("%s on %s: %q %v, want %q", tc.kubeconfig, srv.URL, got, err, tc.user)
			}
		}
		if _, err := whoami(tc.kubeconfig, own); err == nil {
			t.Errorf("%s was accepted by a replica with a CA of its own", tc.kubeconfig)
		}
	}
	// And through the balancer's name: a client that dials a replica but
	// checks the certificate for the balancer's address.
	cfg, err := clientcmd.BuildConfigFromFlags(b.URL, a.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLSClientConfig.ServerName = lb
	if _, err := kubernetes.NewForConfigOrDie(rest.CopyConfig(cfg)).CoordinationV1().Leases("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("listing through the balancer's name: %v", err)
	}
}
