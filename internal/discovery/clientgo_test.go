package discovery

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// newDiscoveryClient returns a real client-go discovery client for srv and a
// cleanup that closes its idle connections (so goleak sees no transport
// goroutines).
func newDiscoveryClient(t *testing.T, rec *recorder) *discovery.DiscoveryClient {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	dc, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: rec.srv.URL, Transport: tr, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("discovery client: %v", err)
	}
	return dc
}

// checkResources asserts that the groups and resources client-go assembled
// contain every served resource with its kind, scope, verbs and short names.
func checkResources(t *testing.T, lists []*metav1.APIResourceList) {
	t.Helper()
	byGV := map[string][]metav1.APIResource{}
	total := 0
	for _, l := range lists {
		byGV[l.GroupVersion] = append(byGV[l.GroupVersion], l.APIResources...)
		total += len(l.APIResources)
	}
	want := wantResources(testResources())
	if total != len(want) {
		t.Errorf("client-go saw %d resources, want %d: %+v", total, len(want), lists)
	}
	for _, w := range want {
		i := slices.IndexFunc(byGV[w.gv.String()], func(r metav1.APIResource) bool { return r.Name == w.name })
		if i < 0 {
			t.Errorf("%s %s missing from discovery", w.gv, w.name)
			continue
		}
		got := byGV[w.gv.String()][i]
		if got.Kind != w.kind || got.Namespaced != w.namespaced || !slices.Equal(got.Verbs, w.verbs) || !slices.Equal(got.ShortNames, w.shortNames) {
			t.Errorf("%s %s = kind %q namespaced %v verbs %v short %v; want kind %q namespaced %v verbs %v short %v",
				w.gv, w.name, got.Kind, got.Namespaced, got.Verbs, got.ShortNames, w.kind, w.namespaced, w.verbs, w.shortNames)
		}
	}
}

func TestClientGoUsesAggregatedDiscovery(t *testing.T) {
	rec := newRecorder(t, newTestDiscovery(t))
	dc := newDiscoveryClient(t, rec)

	groups, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("ServerGroupsAndResources: %v", err)
	}
	checkResources(t, lists)

	var names []string
	for _, g := range groups {
		names = append(names, g.Name+"="+g.PreferredVersion.GroupVersion)
	}
	if want := []string{"=v1", "coordination.k8s.io=coordination.k8s.io/v1"}; !slices.Equal(names, want) {
		t.Errorf("groups (name=preferred) = %v, want %v", names, want)
	}

	// Aggregated discovery needs exactly /api and /apis; a per-group-version
	// request would mean client-go fell back to the legacy documents.
	var paths []string
	for _, r := range rec.requests() {
		paths = append(paths, r.path)
		if !strings.Contains(r.accept, "g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList") {
			t.Errorf("request %s Accept = %q, want the aggregated v2 media type", r.path, r.accept)
		}
	}
	slices.Sort(paths)
	if want := []string{"/api", "/apis"}; !slices.Equal(paths, want) {
		t.Errorf("client-go requested %v, want only %v (aggregated path)", paths, want)
	}
}

func TestClientGoLegacyDiscoveryMatchesAggregated(t *testing.T) {
	rec := newRecorder(t, newTestDiscovery(t))
	dc := newDiscoveryClient(t, rec)
	dc.UseLegacyDiscovery = true

	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("ServerGroupsAndResources (legacy): %v", err)
	}
	checkResources(t, lists)

	var paths []string
	for _, r := range rec.requests() {
		paths = append(paths, r.path)
	}
	slices.Sort(paths)
	want := []string{"/api", "/api/v1", "/apis", "/apis/coordination.k8s.io/v1", "/apis/coordination.k8s.io/v1beta1"}
	if !slices.Equal(paths, want) {
		t.Errorf("legacy discovery requested %v, want %v", paths, want)
	}
}

func TestClientGoServerVersion(t *testing.T) {
	rec := newRecorder(t, newTestDiscovery(t))
	got, err := newDiscoveryClient(t, rec).ServerVersion()
	if err != nil {
		t.Fatalf("ServerVersion: %v", err)
	}
	if *got != testInfo() {
		t.Errorf("ServerVersion = %+v, want %+v", *got, testInfo())
	}
	if got.GitVersion != "v1.33.0-leasehold" || got.Major != "1" || got.Minor != "33" {
		t.Errorf("version %s (%s.%s) does not look like Kubernetes 1.33", got.GitVersion, got.Major, got.Minor)
	}
}

func TestDeferredRESTMapperMapsLeases(t *testing.T) {
	rec := newRecorder(t, newTestDiscovery(t))
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(newDiscoveryClient(t, rec)))

	mapping, err := mapper.RESTMapping(schema.GroupKind{Group: "coordination.k8s.io", Kind: "Lease"})
	if err != nil {
		t.Fatalf("RESTMapping(Lease): %v", err)
	}
	if want := (schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}); mapping.Resource != want {
		t.Errorf("Lease maps to %v, want %v", mapping.Resource, want)
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		t.Errorf("Lease scope = %s, want namespace", mapping.Scope.Name())
	}

	for _, in := range []schema.GroupVersionResource{{Resource: "leases"}, {Resource: "lease"}, {Group: "coordination.k8s.io", Resource: "leases"}} {
		kind, err := mapper.KindFor(in)
		if err != nil {
			t.Fatalf("KindFor(%v): %v", in, err)
		}
		if want := (schema.GroupVersionKind{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"}); kind != want {
			t.Errorf("KindFor(%v) = %v, want %v", in, kind, want)
		}
	}

	nodes, err := mapper.RESTMapping(schema.GroupKind{Kind: "Node"})
	if err != nil {
		t.Fatalf("RESTMapping(Node): %v", err)
	}
	if nodes.Resource.Resource != "nodes" || nodes.Scope.Name() != meta.RESTScopeNameRoot {
		t.Errorf("Node maps to %v scope %s, want nodes at root scope", nodes.Resource, nodes.Scope.Name())
	}
}
