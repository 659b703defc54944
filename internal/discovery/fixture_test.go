package discovery

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/leasehold/leasehold/internal/registry"
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// testResources is the Set the integrator serves: coordination.k8s.io/v1
// leases, core v1 namespaces, nodes (+status) and events, and
// coordination.k8s.io/v1beta1 leasecandidates.
func testResources() *registry.Set {
	coord := coordinationv1.SchemeGroupVersion
	core := corev1.SchemeGroupVersion
	return registry.NewSet(
		&registry.Resource{GroupVersion: coord, Resource: "leases", SingularName: "lease", Kind: "Lease", ListKind: "LeaseList", Namespaced: true, AllowCreateOnUpdate: true},
		&registry.Resource{GroupVersion: core, Resource: "namespaces", SingularName: "namespace", Kind: "Namespace", ListKind: "NamespaceList", ShortNames: []string{"ns"}},
		&registry.Resource{GroupVersion: core, Resource: "nodes", SingularName: "node", Kind: "Node", ListKind: "NodeList", ShortNames: []string{"no"}, StatusSubresource: true},
		&registry.Resource{GroupVersion: core, Resource: "events", SingularName: "event", Kind: "Event", ListKind: "EventList", ShortNames: []string{"ev"}, Namespaced: true},
		&registry.Resource{GroupVersion: coordinationv1beta1.SchemeGroupVersion, Resource: "leasecandidates", SingularName: "leasecandidate", Kind: "LeaseCandidate", ListKind: "LeaseCandidateList", Namespaced: true},
	)
}

// wantResource is what discovery must say about one served resource.
type wantResource struct {
	gv         schema.GroupVersion
	name       string
	kind       string
	namespaced bool
	verbs      []string
	shortNames []string
}

// wantResources derives the expected discovery entries from the fixture, so
// the expectations follow the registry rather than the handler.
func wantResources(set *registry.Set) []wantResource {
	var out []wantResource
	for _, r := range set.All() {
		out = append(out, wantResource{r.GroupVersion, r.Resource, r.Kind, r.Namespaced,
			[]string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}, r.ShortNames})
		if r.StatusSubresource {
			out = append(out, wantResource{r.GroupVersion, r.Resource + "/status", r.Kind, r.Namespaced,
				[]string{"get", "patch", "update"}, nil})
		}
	}
	return out
}

func testInfo() version.Info {
	info := DefaultVersionInfo()
	info.GitCommit = "0123456789abcdef0123456789abcdef01234567"
	return info
}

// request is one request the test server saw.
type request struct {
	path, accept string
}

// recorder is an httptest server in front of a Discovery that remembers the
// requests it served.
type recorder struct {
	srv *httptest.Server
	mu  sync.Mutex
	log []request
}

func newRecorder(t *testing.T, d *Discovery) *recorder {
	t.Helper()
	rec := &recorder{}
	mux := http.NewServeMux()
	d.Register(mux)
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.log = append(rec.log, request{r.URL.Path, r.Header.Get("Accept")})
		rec.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (rec *recorder) requests() []request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.log)
}

func (rec *recorder) reset() {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.log = nil
}

func newTestDiscovery(t *testing.T) *Discovery {
	t.Helper()
	return New(testResources(), testInfo(), WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
}

// get performs one request against the handler without a network.
func get(t *testing.T, d *Discovery, path string, header http.Header) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	w := httptest.NewRecorder()
	d.ServeHTTP(w, req)
	return w
}
