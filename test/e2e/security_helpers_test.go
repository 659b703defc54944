package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// A secured server: the server's own CA mints certificates for nodes and
// users (`leasehold credentials`), a token file names token users, and RBAC
// plus the Node authorizer decide. The token file is rewritten by tests to
// check that tokens are added and revoked without a restart.
type secCluster struct {
	t         *testing.T
	srv       *serverProc
	tokenFile string
	dir       string
}

// Static tokens of the token file every secCluster starts with.
const (
	tokenAdmin   = "admin-token-5f1c0a9e"
	tokenReader  = "reader-token-9d3e7b21"
	tokenElector = "elector-token-2a6c4f88"
	tokenTemp    = "temp-token-7e0b3d15"
)

const initialTokens = tokenAdmin + `,token-admin,uid-admin,"system:masters"
` + tokenReader + `,reader,uid-reader,"readers"
` + tokenElector + `,elector,uid-elector
` + tokenTemp + `,temp,uid-temp
`

func newSecCluster(t *testing.T, serverArgs ...string) *secCluster {
	t.Helper()
	dir := t.TempDir()
	c := &secCluster{t: t, dir: dir, tokenFile: filepath.Join(dir, "tokens.csv")}
	if err := os.WriteFile(c.tokenFile, []byte(initialTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	c.srv = startServer(t, append([]string{"--token-auth-file", c.tokenFile}, serverArgs...)...)
	return c
}

// writeTokens replaces the token file atomically, as an operator's editor
// or config management would.
func (c *secCluster) writeTokens(content string) {
	c.t.Helper()
	tmp := c.tokenFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		c.t.Fatal(err)
	}
	if err := os.Rename(tmp, c.tokenFile); err != nil {
		c.t.Fatal(err)
	}
}

// credentials runs `leasehold credentials ARGS...` for this server and
// returns the kubeconfig path.
func (c *secCluster) credentials(name string, args ...string) string {
	c.t.Helper()
	return mintCredentials(c.t, c.srv, filepath.Join(c.dir, name+".kubeconfig"), args...)
}

// nodeCredentials mints a node's kubeconfig for srv.
func nodeCredentials(t testing.TB, srv *serverProc, node string) string {
	t.Helper()
	return mintCredentials(t, srv, filepath.Join(t.TempDir(), "node.kubeconfig"), "node", node)
}

// mintCredentials runs `leasehold credentials ARGS... --out out` against
// srv's data dir (its CA) and checks the file is private.
func mintCredentials(t testing.TB, srv *serverProc, out string, args ...string) string {
	t.Helper()
	full := append([]string{"credentials"}, args...)
	full = append(full, "--data-dir", srv.DataDir, "--server", srv.URL, "--out", out)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, leaseholdBinary, full...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("leasehold %s: %v\n%s", strings.Join(full, " "), err, b)
	}
	st, err := os.Stat(out)
	if err != nil {
		t.Fatalf("credentials wrote no %s: %v", out, err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600 (it holds a private key)", out, st.Mode().Perm())
	}
	return out
}

// caller sends raw requests as one identity, so tests see status codes and
// bodies exactly as the server wrote them.
type caller struct {
	t    *testing.T
	name string
	base string
	hc   *http.Client
	// token, when set, goes in an Authorization: Bearer header.
	token string
}

// callerFromKubeconfig authenticates as the kubeconfig's user.
func (c *secCluster) callerFromKubeconfig(name, kubeconfig string) *caller {
	c.t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		c.t.Fatalf("loading %s: %v", kubeconfig, err)
	}
	return c.callerFor(name, cfg)
}

// callerWithToken authenticates with a bearer token only (no certificate).
func (c *secCluster) callerWithToken(name, token string) *caller {
	c.t.Helper()
	cl := c.anonymous(name)
	cl.token = token
	return cl
}

// anonymous presents no credential at all (but trusts the server's CA).
func (c *secCluster) anonymous(name string) *caller {
	c.t.Helper()
	admin, err := clientcmd.BuildConfigFromFlags("", c.srv.Kubeconfig)
	if err != nil {
		c.t.Fatal(err)
	}
	cfg := &rest.Config{Host: admin.Host, TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData}}
	return c.callerFor(name, cfg)
}

func (c *secCluster) callerFor(name string, cfg *rest.Config) *caller {
	c.t.Helper()
	cfg.Timeout = 20 * time.Second
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		c.t.Fatalf("HTTP client for %s: %v", name, err)
	}
	c.t.Cleanup(hc.CloseIdleConnections)
	return &caller{t: c.t, name: name, base: cfg.Host, hc: hc}
}

// do sends one request and returns the status code and body.
func (cl *caller) do(method, path, body string) (int, []byte) {
	cl.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, cl.base+path, rd)
	if err != nil {
		cl.t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	switch method {
	case http.MethodPatch:
		req.Header.Set("Content-Type", "application/merge-patch+json")
	default:
		req.Header.Set("Content-Type", "application/json")
	}
	if cl.token != "" {
		req.Header.Set("Authorization", "Bearer "+cl.token)
	}
	resp, err := cl.hc.Do(req)
	if err != nil {
		cl.t.Fatalf("%s: %s %s: %v", cl.name, method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		cl.t.Fatalf("%s: reading %s %s: %v", cl.name, method, path, err)
	}
	return resp.StatusCode, b
}

// expect checks that the request answers code; for codes >= 400 it also
// checks the Status body's message (exactly) and reason.
func (cl *caller) expect(method, path, body string, code int, reason metav1.StatusReason, message string) []byte {
	cl.t.Helper()
	got, b := cl.do(method, path, body)
	if got != code {
		cl.t.Errorf("%s: %s %s = %d, want %d; body %s", cl.name, method, path, got, code, b)
		return b
	}
	if code < 400 {
		return b
	}
	var st metav1.Status
	if err := json.Unmarshal(b, &st); err != nil || st.Kind != "Status" {
		cl.t.Errorf("%s: %s %s: body is not a Status (%v): %s", cl.name, method, path, err, b)
		return b
	}
	if st.Reason != reason || st.Code != int32(code) || st.Status != metav1.StatusFailure {
		cl.t.Errorf("%s: %s %s: Status reason %q code %d status %q, want %q %d Failure", cl.name, method, path, st.Reason, st.Code, st.Status, reason, code)
	}
	if message != "" && st.Message != message {
		cl.t.Errorf("%s: %s %s: message\n  %q\nwant\n  %q", cl.name, method, path, st.Message, message)
	}
	return b
}

// allowed checks that the request is neither 401 nor 403 but code.
func (cl *caller) allowed(method, path, body string, code int) []byte {
	cl.t.Helper()
	return cl.expect(method, path, body, code, "", "")
}

// forbidden checks a 403 with Kubernetes' Forbidden body for a resource.
func (cl *caller) forbidden(method, path, body, message string) {
	cl.t.Helper()
	cl.expect(method, path, body, http.StatusForbidden, metav1.StatusReasonForbidden, message)
}

// unauthorized checks kube-apiserver's 401 body, byte for byte.
func (cl *caller) unauthorized(method, path string) {
	cl.t.Helper()
	got, b := cl.do(method, path, "")
	want := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`
	if got != http.StatusUnauthorized || string(bytes.TrimSpace(b)) != want {
		cl.t.Errorf("%s: %s %s = %d %s, want 401 %s", cl.name, method, path, got, b, want)
	}
}

func leasePath(ns, name string) string {
	p := "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases"
	if name != "" {
		p += "/" + name
	}
	return p
}

func leaseBody(ns, name, holder string) string {
	return fmt.Sprintf(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":%q,"namespace":%q},"spec":{"holderIdentity":%q,"leaseDurationSeconds":40}}`, name, ns, holder)
}

// forbiddenMsg builds the message kube-apiserver writes for a resource
// request RBAC and the Node authorizer both declined.
func forbiddenMsg(user, verb, resource, group, ns, name, reason string) string {
	gr := resource
	if group != "" {
		gr = resource + "." + group
	}
	subject := gr + " is forbidden: "
	if name != "" {
		subject = fmt.Sprintf("%s %q is forbidden: ", gr, name)
	}
	where := "at the cluster scope"
	if ns != "" {
		where = fmt.Sprintf("in the namespace %q", ns)
	}
	m := fmt.Sprintf("%sUser %q cannot %s resource %q in API group %q %s", subject, user, verb, resource, group, where)
	if reason != "" {
		m += ": " + reason
	}
	return m
}
