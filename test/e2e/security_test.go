package e2e

// Who may do what (docs/security.md): every allow and deny path of the security model
// against a real server, with the status code and the exact Status body a
// kube-apiserver writes. The identities are the ones a deployment has: the
// admin (system:masters), two nodes with certificates minted by
// `leasehold credentials node`, a read-only user, an elector, anonymous
// callers, a bad and a revoked token, and a certificate from a foreign CA.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/leasehold/leasehold/internal/testdeps"
)

const (
	reasonOtherLease = "can only access node lease with the same name as the requesting node"
	reasonLeaseVerbs = "can only get, create, update, patch, or delete a node lease"
	reasonLeaseNS    = `can only access leases in the "kube-node-lease" system namespace`
)

func TestSecurityNodeIdentity(t *testing.T) {
	t.Parallel()
	c := newSecCluster(t)
	admin := c.callerFromKubeconfig("admin", c.srv.Kubeconfig)
	n1 := c.callerFromKubeconfig("node-1", c.credentials("node-1", "node", "node-1"))
	const u1 = "system:node:node-1"

	// Another node's lease and Node, and a leader-election lease.
	admin.allowed("POST", leasePath(nodeLeaseNS, ""), leaseBody(nodeLeaseNS, "node-2", "node-2"), http.StatusCreated)
	admin.allowed("POST", "/api/v1/nodes", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-2"}}`, http.StatusCreated)
	admin.allowed("POST", leasePath("kube-system", ""), leaseBody("kube-system", "controller-lock", "somebody"), http.StatusCreated)

	// Its own Node and lease: everything the kubelet does.
	n1.allowed("POST", "/api/v1/nodes", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-1","labels":{"kubernetes.io/hostname":"node-1"}}}`, http.StatusCreated)
	n1.allowed("GET", "/api/v1/nodes/node-1", "", http.StatusOK)
	n1.allowed("GET", "/api/v1/nodes?fieldSelector=metadata.name%3Dnode-1", "", http.StatusOK)
	n1.allowed("PATCH", "/api/v1/nodes/node-1/status", `{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"ready"}]}}`, http.StatusOK)
	n1.allowed("POST", leasePath(nodeLeaseNS, ""), leaseBody(nodeLeaseNS, "node-1", "node-1"), http.StatusCreated)
	n1.allowed("GET", leasePath(nodeLeaseNS, "node-1"), "", http.StatusOK)
	n1.allowed("PATCH", leasePath(nodeLeaseNS, "node-1"), `{"spec":{"renewTime":"2026-11-25T10:00:00.000000Z"}}`, http.StatusOK)

	// Another node's lease: every verb refused with the Node authorizer's reason.
	for _, verb := range []struct{ method, verb, body string }{
		{"GET", "get", ""},
		{"PATCH", "patch", `{"spec":{"holderIdentity":"node-1"}}`},
		{"PUT", "update", leaseBody(nodeLeaseNS, "node-2", "node-1")},
		{"DELETE", "delete", ""},
	} {
		n1.forbidden(verb.method, leasePath(nodeLeaseNS, "node-2"), verb.body,
			forbiddenMsg(u1, verb.verb, "leases", "coordination.k8s.io", nodeLeaseNS, "node-2", reasonOtherLease))
	}
	// Creating a lease under another node's name: NodeRestriction admission.
	n1.forbidden("POST", leasePath(nodeLeaseNS, ""), leaseBody(nodeLeaseNS, "node-3", "node-1"),
		`leases.coordination.k8s.io "node-3" is forbidden: `+reasonOtherLease)
	// Never list or watch leases, never outside kube-node-lease.
	n1.forbidden("GET", leasePath(nodeLeaseNS, ""), "",
		forbiddenMsg(u1, "list", "leases", "coordination.k8s.io", nodeLeaseNS, "", reasonLeaseVerbs))
	n1.forbidden("GET", leasePath("kube-system", "controller-lock"), "",
		forbiddenMsg(u1, "get", "leases", "coordination.k8s.io", "kube-system", "controller-lock", reasonLeaseNS))

	// Other Nodes: not readable, not writable; its own Node not deletable.
	n1.forbidden("GET", "/api/v1/nodes/node-2", "",
		forbiddenMsg(u1, "get", "nodes", "", "", "node-2", "node 'node-1' cannot read 'node-2', only its own Node object"))
	n1.forbidden("GET", "/api/v1/nodes", "",
		forbiddenMsg(u1, "list", "nodes", "", "", "", "node 'node-1' cannot read all nodes, only its own Node object"))
	n1.forbidden("PATCH", "/api/v1/nodes/node-2", `{"metadata":{"labels":{"x":"y"}}}`,
		`nodes "node-2" is forbidden: node "node-1" is not allowed to modify node "node-2"`)
	n1.expect("DELETE", "/api/v1/nodes/node-1", "", http.StatusForbidden, "Forbidden", "")
	// Nor its own taints.
	n1.forbidden("PATCH", "/api/v1/nodes/node-1", `{"spec":{"taints":[{"key":"k","effect":"NoSchedule"}]}}`,
		`nodes "node-1" is forbidden: node "node-1" is not allowed to modify taints`)

	// Its own lease, deleted by itself: allowed.
	n1.allowed("DELETE", leasePath(nodeLeaseNS, "node-1"), "", http.StatusOK)
	// The admin may do anything.
	admin.allowed("DELETE", leasePath(nodeLeaseNS, "node-2"), "", http.StatusOK)
	admin.allowed("DELETE", "/api/v1/nodes/node-2", "", http.StatusOK)
}

func TestSecurityUsersAndTokens(t *testing.T) {
	t.Parallel()
	c := newSecCluster(t)
	admin := c.callerWithToken("token-admin", tokenAdmin)
	reader := c.callerWithToken("reader", tokenReader)
	anon := c.anonymous("anonymous")
	admin.allowed("POST", leasePath("kube-system", ""), leaseBody("kube-system", "controller-lock", "somebody"), http.StatusCreated)

	// Anonymous: the public endpoints only.
	for _, p := range []string{"/healthz", "/livez", "/readyz", "/version"} {
		anon.allowed("GET", p, "", http.StatusOK)
	}
	anon.forbidden("GET", "/api/v1/nodes", "", forbiddenMsg("system:anonymous", "list", "nodes", "", "", "", ""))
	anon.forbidden("GET", "/metrics", "", `forbidden: User "system:anonymous" cannot get path "/metrics"`)
	anon.forbidden("GET", "/debug/pprof/", "", `forbidden: User "system:anonymous" cannot get path "/debug/pprof/"`)

	// A presented but invalid credential is a 401, even on public paths.
	bad := c.callerWithToken("bad-token", "not-a-token")
	bad.unauthorized("GET", "/api/v1/nodes")
	bad.unauthorized("GET", "/healthz")
	c.foreignCertCaller().unauthorized("GET", "/api/v1/nodes")

	// A read-only user: nothing until bound, then reads but no writes.
	reader.forbidden("GET", leasePath("kube-system", ""), "", forbiddenMsg("reader", "list", "leases", "coordination.k8s.io", "kube-system", "", ""))
	admin.allowed("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
		`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"readers-view"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"readers"}]}`,
		http.StatusCreated)
	testdeps.Eventually(t, 10*time.Second, 200*time.Millisecond, "the reader's binding takes effect", func() error {
		if code, b := reader.do("GET", leasePath("kube-system", ""), ""); code != http.StatusOK {
			return fmt.Errorf("list leases as reader: %d %s", code, b)
		}
		return nil
	})
	reader.forbidden("DELETE", leasePath("kube-system", "controller-lock"), "",
		forbiddenMsg("reader", "delete", "leases", "coordination.k8s.io", "kube-system", "controller-lock", ""))
	reader.forbidden("GET", "/metrics", "", `forbidden: User "reader" cannot get path "/metrics"`)

	// Escalation: allowed to create bindings and roles, but not to grant
	// what it does not hold.
	admin.allowed("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
		`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"rbac-writer","namespace":"default"},"rules":[{"apiGroups":["rbac.authorization.k8s.io"],"resources":["roles","rolebindings"],"verbs":["create"]}]}`,
		http.StatusCreated)
	admin.allowed("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
		`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"reader-rbac-writer","namespace":"default"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"rbac-writer"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"reader"}]}`,
		http.StatusCreated)
	escalating := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"reader-edit","namespace":"default"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"reader"}]}`
	testdeps.Eventually(t, 10*time.Second, 200*time.Millisecond, "the escalation check refuses the reader's binding to edit", func() error {
		code, b := reader.do("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", escalating)
		if code != http.StatusForbidden || !strings.Contains(string(b), `rolebindings.rbac.authorization.k8s.io \"reader-edit\" is forbidden: user \"reader\" (groups=[\"readers\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:`) {
			return fmt.Errorf("binding to edit as reader: %d %s", code, b)
		}
		return nil
	})
	code, b := reader.do("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
		`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"lease-deleter","namespace":"default"},"rules":[{"apiGroups":["coordination.k8s.io"],"resources":["leases"],"verbs":["delete"]}]}`)
	if code != http.StatusForbidden || !strings.Contains(string(b), `is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"coordination.k8s.io\"], Resources:[\"leases\"], Verbs:[\"delete\"]}`) {
		t.Errorf("role with delete leases as reader: %d %s", code, b)
	}
	// With `bind` on the edit ClusterRole, the same binding is allowed.
	admin.allowed("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
		`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"bind-edit"},"rules":[{"apiGroups":["rbac.authorization.k8s.io"],"resources":["clusterroles"],"verbs":["bind"],"resourceNames":["edit"]}]}`,
		http.StatusCreated)
	admin.allowed("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
		`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"reader-bind-edit"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"bind-edit"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"reader"}]}`,
		http.StatusCreated)
	testdeps.Eventually(t, 10*time.Second, 200*time.Millisecond, "bind lets the reader bind edit", func() error {
		if code, b := reader.do("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", escalating); code != http.StatusCreated {
			return fmt.Errorf("binding to edit with bind: %d %s", code, b)
		}
		return nil
	})

	// Tokens are read again when the file changes: revoke one, add one.
	temp := c.callerWithToken("temp", tokenTemp)
	temp.forbidden("GET", "/api/v1/nodes", "", forbiddenMsg("temp", "list", "nodes", "", "", "", ""))
	c.writeTokens(strings.Replace(initialTokens, tokenTemp+",temp,uid-temp\n", "", 1) + "new-token-41d9,newbie,uid-newbie,\"system:masters\"\n")
	testdeps.Eventually(t, 10*time.Second, 200*time.Millisecond, "the revoked token is refused", func() error {
		if code, _ := temp.do("GET", "/api/v1/nodes", ""); code != http.StatusUnauthorized {
			return fmt.Errorf("revoked token: %d", code)
		}
		return nil
	})
	temp.unauthorized("GET", "/api/v1/nodes")
	c.callerWithToken("newbie", "new-token-41d9").allowed("GET", "/api/v1/nodes", "", http.StatusOK)
	admin.allowed("GET", "/metrics", "", http.StatusOK)

	// No credential reaches the log, valid, invalid or revoked.
	logs := c.srv.Output()
	for _, tok := range []string{tokenAdmin, tokenReader, tokenElector, tokenTemp, "new-token-41d9", "not-a-token"} {
		if strings.Contains(logs, tok) {
			t.Errorf("the server log contains the token %q", tok)
		}
	}
}

// foreignCertCaller presents a client certificate for system:masters signed
// by a CA the server does not trust: kube-apiserver answers 401, it does not
// fail the TLS handshake.
func (c *secCluster) foreignCertCaller() *caller {
	c.t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		c.t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "intruder-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		c.t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		c.t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		c.t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "intruder", Organization: []string{"system:masters"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		c.t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		c.t.Fatal(err)
	}
	admin, err := clientcmd.BuildConfigFromFlags("", c.srv.Kubeconfig)
	if err != nil {
		c.t.Fatal(err)
	}
	return c.callerFor("intruder", &rest.Config{Host: admin.Host, TLSClientConfig: rest.TLSClientConfig{
		CAData:   admin.CAData,
		CertData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyData:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}})
}
