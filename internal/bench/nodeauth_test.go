package bench

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// newFakeNodeClients builds node clients of kind against f with tokens for
// nodes, and closes them when the test ends.
func newFakeNodeClients(t *testing.T, f *fakeLeases, kind string, nodes []string) (*Clients, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.csv")
	tokens, err := EnsureNodeTokens(path, nodes)
	if err != nil {
		t.Fatal(err)
	}
	clients, err := NewNodeClients(f.config(t), kind, ContentTypeProtobuf, 2, tokens)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(clients.Close)
	return clients, path
}

func names(n int, name func(int) string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = name(i)
	}
	return out
}

// wantOnly fails the test unless every header recorded for key is want.
func wantOnly(t *testing.T, seen map[string][]string, key, want string) {
	t.Helper()
	if len(seen[key]) == 0 {
		t.Errorf("no request for %s", key)
	}
	for _, got := range seen[key] {
		if got != want {
			t.Errorf("a request for %s carried %q, want %q", key, got, want)
			return
		}
	}
}

// Every request about lease N, renewals and the GETs after conflicts
// included, carries node N's token and no client certificate; only the
// namespace and the lease list use the kubeconfig's credentials.
func TestNodeClientsRenewWithTheirNodesTokens(t *testing.T) {
	forEachKind(t, func(t *testing.T, kind string) {
		f := newFakeLeases(t)
		const leases = 7
		clients, path := newFakeNodeClients(t, f, kind, names(leases, MaxLeaseName))
		cfg := Config{Namespace: corev1.NamespaceNodeLease, Clients: 3, Leases: leases, Duration: 300 * time.Millisecond}
		res, err := RunMax(context.Background(), cfg, clients.Factory())
		if err != nil {
			t.Fatal(err)
		}
		if res.Ops < 2*leases || res.Errors[KindConflict] == 0 || res.ErrorsTotal != res.Errors[KindConflict] {
			t.Fatalf("want several renewals per lease, some conflicts (so GETs) and no other errors: %s", res)
		}
		seen := f.seen()
		tokens := nodeTokensIn(t, path)
		for i := range leases {
			name := MaxLeaseName(i)
			wantOnly(t, seen, "lease/"+name, "Bearer "+tokens[name])
			delete(seen, "lease/"+name)
		}
		wantOnly(t, seen, "namespaces", "Bearer "+adminToken+withClientCert)
		wantOnly(t, seen, "lease-list", "Bearer "+adminToken+withClientCert)
		delete(seen, "namespaces")
		delete(seen, "lease-list")
		if len(seen) != 0 {
			t.Errorf("requests for other objects: %v", seen)
		}
	})
}

// Registered Nodes are created by their own nodes too.
func TestNodeClientsRegisterNodesAsThemselves(t *testing.T) {
	f := newFakeLeases(t)
	const nodes = 5
	clients, path := newFakeNodeClients(t, f, ClientLean, names(nodes, RateNodeName))
	cfg := Config{Namespace: corev1.NamespaceNodeLease, RegisterNodes: true, Clients: 2, Nodes: nodes, Interval: 100 * time.Millisecond, Duration: 300 * time.Millisecond}
	if _, err := RunRate(context.Background(), cfg, clients.Factory()); err != nil {
		t.Fatal(err)
	}
	seen := f.seen()
	tokens := nodeTokensIn(t, path)
	for i := range nodes {
		name := RateNodeName(i)
		wantOnly(t, seen, "node/"+name, "Bearer "+tokens[name])
		wantOnly(t, seen, "lease/"+name, "Bearer "+tokens[name])
	}
}

// Nodes may write leases in kube-node-lease only: a run elsewhere is
// refused before it starts.
func TestNodeClientsNeedTheNodeLeaseNamespace(t *testing.T) {
	f := newFakeLeases(t)
	clients, _ := newFakeNodeClients(t, f, ClientLean, names(2, MaxLeaseName))
	cfg := Config{Namespace: "bench", Clients: 1, Leases: 2, Duration: time.Second}
	_, err := RunMax(context.Background(), cfg, clients.Factory())
	if err == nil || !strings.Contains(err.Error(), `must be in "kube-node-lease"`) {
		t.Fatalf("got %v, want a refusal naming kube-node-lease", err)
	}
}

// A server that does not know the tokens fails setup with a message saying
// how to start it; one that forbids a node its own lease, at once.
func TestAwaitNodeTokenExplainsRefusals(t *testing.T) {
	for _, tc := range []struct {
		refuse *apierrors.StatusError
		want   string
	}{
		{apierrors.NewUnauthorized("Unauthorized"), "start it with --token-auth-file"},
		{apierrors.NewForbidden(leaseResource, "node-000000", errors.New(`User "system:node:node-000000" cannot get resource "leases"`)), "is the Node authorizer on?"},
		{apierrors.NewForbidden(leaseResource, "node-000000", errors.New(`User "system:anonymous" cannot get resource "leases"`)), "the server ignores bearer tokens"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			f := newFakeLeases(t)
			f.refuse = tc.refuse
			clients, _ := newFakeNodeClients(t, f, ClientTyped, []string{"node-000000"})
			client, _ := clients.Factory()(0)
			cfg := Config{Namespace: corev1.NamespaceNodeLease}.withDefaults()
			slot := &leaseSlot{name: "node-000000"}
			var err error
			if slot.auth, err = nodeTokensOf(client).authorization(slot.name); err != nil {
				t.Fatal(err)
			}
			err = awaitNodeToken(context.Background(), cfg, client, nodeTokensOf(client), slot, 300*time.Millisecond)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// stubTransport answers every request with the same encoded lease, in
// process, and keeps the last request's Authorization header.
type stubTransport struct {
	answer []byte
	auth   []string
}

func (s *stubTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	s.auth = req.Header["Authorization"]
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {runtime.ContentTypeProtobuf}},
		Body:       io.NopCloser(bytes.NewReader(s.answer)),
	}, nil
}

// stubLeanLeases is a lean Lease API over a stubTransport.
func stubLeanLeases(t testing.TB) (*leanLeases, *stubTransport, *coordinationv1.Lease) {
	t.Helper()
	lease := newLease(corev1.NamespaceNodeLease, &leaseSlot{name: "node-000000", holder: "node-000000"}, 40, time.Now())
	lease.ResourceVersion = "5"
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	var answer bytes.Buffer
	lease.APIVersion, lease.Kind = "coordination.k8s.io/v1", "Lease"
	if err := info.Serializer.Encode(lease, &answer); err != nil {
		t.Fatal(err)
	}
	stub := &stubTransport{answer: answer.Bytes()}
	return testLeanLeases(t, ContentTypeProtobuf, &http.Client{Transport: stub}, corev1.NamespaceNodeLease), stub, lease
}

// A node's token costs the lean client's renewal no allocation: the header
// is set in place from a value made once per node.
func TestLeanRenewalWithATokenAllocatesNoMore(t *testing.T) {
	l, stub, lease := stubLeanLeases(t)
	ctx := context.Background()
	auth := bearer("tok")
	renew := func(a authorization) func() {
		return func() {
			out, err := l.Update(ctx, a, lease)
			if err != nil {
				t.Fatal(err)
			}
			lease = out
		}
	}
	renew(auth)()
	if len(stub.auth) != 1 || stub.auth[0] != "Bearer tok" {
		t.Fatalf("renewal carried Authorization %q, want Bearer tok", stub.auth)
	}
	renew(nil)()
	if stub.auth != nil {
		t.Fatalf("renewal without a token carried Authorization %q", stub.auth)
	}
	without := testing.AllocsPerRun(200, renew(nil))
	with := testing.AllocsPerRun(200, renew(auth))
	t.Logf("allocations per lean renewal: %.1f without a token, %.1f with", without, with)
	if with > without {
		t.Errorf("a token adds %.1f allocations per renewal", with-without)
	}
}

// BenchmarkLeanRenewalAuthorization is the lean client's side of a renewal
// (no network, no server) with and without a node's token.
func BenchmarkLeanRenewalAuthorization(b *testing.B) {
	for _, tc := range []struct {
		name string
		auth authorization
	}{{"kubeconfig", nil}, {"node-token", bearer("tok")}} {
		b.Run(tc.name, func(b *testing.B) {
			l, _, lease := stubLeanLeases(b)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				out, err := l.Update(ctx, tc.auth, lease)
				if err != nil {
					b.Fatal(err)
				}
				lease = out
			}
		})
	}
}
