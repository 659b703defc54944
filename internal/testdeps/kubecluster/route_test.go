package kubecluster_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/leasehold/leasehold/internal/testdeps/kubecluster"
)

// backendLease is the one lease the test backend lists: seeing it proves a
// request reached the backend rather than kube-apiserver's etcd storage.
const backendLease = "from-test-backend"

// seenRequest is what the backend recorded of one request.
type seenRequest struct {
	Method, Path, UserAgent string
	Proto                   string
	User                    string
	Groups                  []string
	// Extra maps the lowercased names of X-Remote-Extra-* headers to
	// their values.
	Extra map[string][]string
	// ClientCN is the subject CN of the client certificate presented ("" for
	// none); ClientVerified says whether it chains to the front-proxy CA
	// with client-auth usage, as an aggregated server must check.
	ClientCN       string
	ClientVerified bool
}

// backend is a tiny aggregated server for coordination.k8s.io/v1 in the
// test process: discovery, a list of one lease, and a record of who asked.
type backend struct {
	srv  *httptest.Server
	port int
	ca   []byte // caBundle for its serving certificate

	frontProxy *x509.CertPool
	mu         sync.Mutex
	seen       []seenRequest
}

// startBackend serves on 127.0.0.1 with a certificate for dnsNames issued
// by the cluster's aggregated-serving CA. It requests, and does not
// require, a client certificate, like the generic apiserver.
func startBackend(t *testing.T, c *kubecluster.Cluster, dnsNames []string) *backend {
	t.Helper()
	certFile, keyFile, caPEM := c.IssueServingCert(t, dnsNames, []net.IP{net.IPv4(127, 0, 0, 1)})
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	fpPEM, err := os.ReadFile(c.FrontProxyCAFile)
	if err != nil {
		t.Fatal(err)
	}
	b := &backend{ca: caPEM, frontProxy: x509.NewCertPool()}
	if !b.frontProxy.AppendCertsFromPEM(fpPEM) {
		t.Fatal("front-proxy CA: no certificate")
	}
	b.srv = httptest.NewUnstartedServer(http.HandlerFunc(b.serve))
	b.srv.EnableHTTP2 = true // kube-apiserver's proxy speaks HTTP/2 when offered
	b.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequestClientCert}
	b.srv.StartTLS()
	t.Cleanup(b.srv.Close)
	b.port = b.srv.Listener.Addr().(*net.TCPAddr).Port
	return b
}

func (b *backend) serve(w http.ResponseWriter, r *http.Request) {
	s := seenRequest{Method: r.Method, Path: r.URL.Path, UserAgent: r.UserAgent(), Proto: r.Proto,
		User: r.Header.Get("X-Remote-User"), Groups: r.Header.Values("X-Remote-Group"), Extra: map[string][]string{}}
	for k, v := range r.Header {
		if name, ok := strings.CutPrefix(strings.ToLower(k), "x-remote-extra-"); ok {
			s.Extra[name] = v
		}
	}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		leaf := r.TLS.PeerCertificates[0]
		s.ClientCN = leaf.Subject.CommonName
		inter := x509.NewCertPool()
		for _, c := range r.TLS.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		_, err := leaf.Verify(x509.VerifyOptions{Roots: b.frontProxy, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		s.ClientVerified = err == nil
	}
	b.mu.Lock()
	b.seen = append(b.seen, s)
	b.mu.Unlock()

	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/apis/coordination.k8s.io/v1":
		_ = json.NewEncoder(w).Encode(metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "coordination.k8s.io/v1",
			APIResources: []metav1.APIResource{{
				Name: "leases", SingularName: "lease", Namespaced: true, Kind: "Lease",
				Verbs: metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"},
			}},
		})
	case r.Method == http.MethodGet && r.URL.Path == "/apis/coordination.k8s.io/v1/leases":
		_ = json.NewEncoder(w).Encode(coordinationv1.LeaseList{
			TypeMeta: metav1.TypeMeta{Kind: "LeaseList", APIVersion: "coordination.k8s.io/v1"},
			ListMeta: metav1.ListMeta{ResourceVersion: "1"},
			Items: []coordinationv1.Lease{{
				ObjectMeta: metav1.ObjectMeta{Name: backendLease, Namespace: "default", ResourceVersion: "1",
					UID: "00000000-0000-0000-0000-000000000001", CreationTimestamp: metav1.Now()},
				Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("test-backend")},
			}},
		})
	default:
		// Everything else (kube-apiserver's identity lease, /apis, OpenAPI)
		// is not this backend's business.
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound, Message: "not served by the test backend"})
	}
}

// listsBy returns the recorded lease lists across namespaces whose
// X-Remote-User is user, sent by kubectl.
func (b *backend) listsBy(user string) []seenRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []seenRequest
	for _, s := range b.seen {
		if s.Path == "/apis/coordination.k8s.io/v1/leases" && s.User == user && strings.HasPrefix(s.UserAgent, "kubectl") {
			out = append(out, s)
		}
	}
	return out
}

// probes counts kube-apiserver's availability probes (discovery as
// system:kube-aggregator in system:masters).
func (b *backend) probes() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, s := range b.seen {
		if s.Path == "/apis/coordination.k8s.io/v1" && s.User == "system:kube-aggregator" && slices.Contains(s.Groups, "system:masters") {
			n++
		}
	}
	return n
}

// TestRouteGroupVersionToATestServer points coordination.k8s.io/v1 at a
// backend in the test process through an ExternalName Service for
// localhost on the backend's (random, not 443) port, and checks:
//   - the APIService becomes Available, by kube-apiserver's probe;
//   - kubectl get leases -A reaches the backend (its one lease is listed,
//     the one in etcd is not), over HTTP/2, with the caller's identity in
//     X-Remote-User, X-Remote-Group and the credential-id extra, over
//     kube-apiserver's front-proxy client certificate (CN
//     front-proxy-client, chaining to the front-proxy CA);
//   - a caller RBAC denies is refused by kube-apiserver and never reaches
//     the backend;
//   - after RestartAPIServer the route is still there (automanaged label
//     removed) and still used;
//   - RouteLocal brings the etcd leases back.
func TestRouteGroupVersionToATestServer(t *testing.T) {
	c := kubecluster.Start(t, kubecluster.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := c.AdminClientset(t)
	if _, err := admin.CoordinationV1().Leases("default").Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "in-etcd"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("etcd")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// alice (group devs) may list leases; bob may not.
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "lease-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "devs-read-leases"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "lease-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "devs"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	opts := kubecluster.RouteOptions{ServiceName: "leasehold", Namespace: "kube-system"}
	b := startBackend(t, c, []string{opts.ServerName(), "localhost"})
	opts.Port, opts.CABundle = b.port, b.ca
	c.RouteGroupVersion(t, opts)
	if b.probes() == 0 {
		t.Errorf("APIService Available, but the backend saw no probe from system:kube-aggregator")
	}
	assertLeases(t, c, c.AdminKubeconfig, backendLease, "in-etcd")
	checkIdentity(t, b, kubecluster.AdminUser, []string{"system:masters", "system:authenticated"})

	alice := c.UserKubeconfig(t, "alice", "devs")
	assertLeases(t, c, alice, backendLease, "in-etcd")
	checkIdentity(t, b, "alice", []string{"devs", "system:authenticated"})

	bob := c.UserKubeconfig(t, "bob")
	if out, err := c.KubectlAs(t, bob, "", "get", "leases", "-A", "-o", "name"); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("bob listing leases: %q, %v; want forbidden", out, err)
	}
	if n := len(b.listsBy("bob")); n != 0 {
		t.Errorf("the backend saw %d requests from bob, whom kube-apiserver should have refused", n)
	}

	pid := c.APIServerPID()
	c.RestartAPIServer(t)
	if c.APIServerPID() == pid {
		t.Fatalf("RestartAPIServer kept pid %d", pid)
	}
	svc := c.APIService(t)
	if _, ok := svc.GetLabels()["kube-aggregator.kubernetes.io/automanaged"]; ok {
		t.Errorf("after restart the APIService has the automanaged label again: %v", svc.GetLabels())
	}
	if port, _, _ := unstructured.NestedInt64(svc.Object, "spec", "service", "port"); port != int64(b.port) {
		t.Fatalf("after restart spec.service.port = %d, want %d (reverted to Local?)", port, b.port)
	}
	before := len(b.listsBy(kubecluster.AdminUser))
	assertLeases(t, c, c.AdminKubeconfig, backendLease, "in-etcd")
	if len(b.listsBy(kubecluster.AdminUser)) == before {
		t.Errorf("after restart the lease list did not reach the backend")
	}

	c.RouteLocal(t)
	assertLeases(t, c, c.AdminKubeconfig, "in-etcd", backendLease)
	if l := c.APIService(t).GetLabels()["kube-aggregator.kubernetes.io/automanaged"]; l != "onstart" {
		t.Errorf("after RouteLocal the automanaged label is %q, want onstart", l)
	}
}

// TestProbeDoesNotCheckTheServingCertificate documents a trap: a backend
// whose certificate lacks <service>.<namespace>.svc passes kube-apiserver's
// availability probe (it does not verify the certificate), so the
// APIService is Available=True, yet every proxied request fails with 503
// because the proxy does verify it.
func TestProbeDoesNotCheckTheServingCertificate(t *testing.T) {
	c := kubecluster.Start(t, kubecluster.Options{})
	opts := kubecluster.RouteOptions{}
	b := startBackend(t, c, []string{"localhost"}) // no leasehold.kube-system.svc
	opts.Port, opts.CABundle = b.port, b.ca
	c.RouteGroupVersion(t, opts) // Available=True: the probe passed
	// kubectl get leases would only say the server has no resource type
	// "leases" (its discovery of coordination.k8s.io/v1 fails the same
	// way), so ask directly and read kube-apiserver's 503 body.
	hc, err := rest.HTTPClientFor(c.RESTConfig(t, c.AdminKubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(c.URL + "/apis/coordination.k8s.io/v1/leases")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "x509") || !strings.Contains(string(body), opts.ServerName()) {
		t.Fatalf("lease list with a backend certificate lacking %s: %d %q; want 503 naming the x509 error", opts.ServerName(), resp.StatusCode, body)
	}
	t.Logf("kube-apiserver answered %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	if n := len(b.listsBy(kubecluster.AdminUser)); n != 0 {
		t.Errorf("the backend served %d lease lists over a connection kube-apiserver should have refused", n)
	}
}

// assertLeases lists leases in every namespace with kubectl as kubeconfig
// and wants present listed and absent not.
func assertLeases(t *testing.T, c *kubecluster.Cluster, kubeconfig, present, absent string) {
	t.Helper()
	out, err := c.KubectlAs(t, kubeconfig, "", "get", "leases", "-A", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "lease.coordination.k8s.io/"+present+"\n") || strings.Contains(out, "/"+absent+"\n") {
		t.Fatalf("kubectl get leases -A listed:\n%s\nwant %s and not %s", out, present, absent)
	}
}

// checkIdentity wants the backend's last lease list from user to carry
// exactly groups and to come over kube-apiserver's front-proxy client
// certificate.
func checkIdentity(t *testing.T, b *backend, user string, groups []string) {
	t.Helper()
	lists := b.listsBy(user)
	if len(lists) == 0 {
		t.Errorf("the backend saw no lease list from %s", user)
		return
	}
	s := lists[len(lists)-1]
	if !slices.Equal(s.Groups, groups) {
		t.Errorf("%s's request reached the backend with X-Remote-Group %q, want %q", user, s.Groups, groups)
	}
	if s.ClientCN != "front-proxy-client" || !s.ClientVerified {
		t.Errorf("%s's request came with client certificate CN %q (verified against the front-proxy CA: %v), want front-proxy-client, verified", user, s.ClientCN, s.ClientVerified)
	}
	// A user authenticated by client certificate carries the certificate's
	// hash as an extra, its key percent-encoded in the header name.
	if id := s.Extra["authentication.kubernetes.io%2fcredential-id"]; len(id) != 1 || !strings.HasPrefix(id[0], "X509SHA256=") {
		t.Errorf("%s's request carried extras %q, want authentication.kubernetes.io%%2Fcredential-id = X509SHA256=…", user, s.Extra)
	}
	if s.Proto != "HTTP/2.0" {
		t.Errorf("%s's request reached the backend over %s, want HTTP/2.0 (offered by the backend)", user, s.Proto)
	}
}
