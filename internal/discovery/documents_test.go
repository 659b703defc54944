package discovery

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apidiscoveryv2beta1 "k8s.io/api/apidiscovery/v2beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// decode reads a response body with the codec for its media type after
// checking the kind and apiVersion actually written on the wire (the
// decoders default a missing apiVersion from the target type).
func decode(t *testing.T, d *Discovery, w *httptest.ResponseRecorder, into runtime.Object, wantAPIVersion, wantKind string) {
	t.Helper()
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	mediaType, _, _ := strings.Cut(w.Header().Get("Content-Type"), ";")
	var wire metav1.TypeMeta
	switch mediaType {
	case runtime.ContentTypeJSON:
		if err := json.Unmarshal(w.Body.Bytes(), &wire); err != nil {
			t.Fatalf("reading JSON TypeMeta: %v", err)
		}
	case runtime.ContentTypeProtobuf:
		// The protobuf envelope is a 4-byte magic number and a runtime.Unknown.
		var u runtime.Unknown
		if err := u.Unmarshal(w.Body.Bytes()[4:]); err != nil {
			t.Fatalf("reading protobuf envelope: %v", err)
		}
		wire = metav1.TypeMeta{APIVersion: u.APIVersion, Kind: u.Kind}
	}
	if wire.APIVersion != wantAPIVersion || wire.Kind != wantKind {
		t.Errorf("%s document is apiVersion %q kind %q, want %q %q", mediaType, wire.APIVersion, wire.Kind, wantAPIVersion, wantKind)
	}
	info, ok := runtime.SerializerInfoForMediaType(d.codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		t.Fatalf("no serializer for %q", mediaType)
	}
	if _, _, err := info.Serializer.Decode(w.Body.Bytes(), nil, into); err != nil {
		t.Fatalf("decoding %s: %v", mediaType, err)
	}
	// Compare content only; the wire TypeMeta was checked above.
	into.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
}

func TestProtobufMatchesJSON(t *testing.T) {
	d := newTestDiscovery(t)
	for _, tc := range []struct {
		path, apiVersion, kind string
		newObj                 func() runtime.Object
	}{
		// kube-apiserver leaves apiVersion empty on /api and /api/v1.
		{"/api", "", "APIVersions", func() runtime.Object { return &metav1.APIVersions{} }},
		{"/api/v1", "", "APIResourceList", func() runtime.Object { return &metav1.APIResourceList{} }},
		{"/apis", "v1", "APIGroupList", func() runtime.Object { return &metav1.APIGroupList{} }},
		{"/apis/coordination.k8s.io", "v1", "APIGroup", func() runtime.Object { return &metav1.APIGroup{} }},
		{"/apis/coordination.k8s.io/v1", "v1", "APIResourceList", func() runtime.Object { return &metav1.APIResourceList{} }},
		{"/apis/coordination.k8s.io/v1beta1", "v1", "APIResourceList", func() runtime.Object { return &metav1.APIResourceList{} }},
	} {
		t.Run(tc.path, func(t *testing.T) {
			fromJSON, fromProto := tc.newObj(), tc.newObj()
			decode(t, d, get(t, d, tc.path, http.Header{"Accept": {"application/json"}}), fromJSON, tc.apiVersion, tc.kind)
			decode(t, d, get(t, d, tc.path, http.Header{"Accept": {protobuf}}), fromProto, tc.apiVersion, tc.kind)
			if !reflect.DeepEqual(fromJSON, fromProto) {
				t.Errorf("protobuf document differs from JSON:\njson  %+v\nproto %+v", fromJSON, fromProto)
			}
		})
	}
}

func TestAggregatedDocuments(t *testing.T) {
	d := newTestDiscovery(t)

	var apisV2, apisProto apidiscoveryv2.APIGroupDiscoveryList
	decode(t, d, get(t, d, "/apis", http.Header{"Accept": {v2JSON}}), &apisV2, "apidiscovery.k8s.io/v2", "APIGroupDiscoveryList")
	decode(t, d, get(t, d, "/apis", http.Header{"Accept": {v2Proto}}), &apisProto, "apidiscovery.k8s.io/v2", "APIGroupDiscoveryList")
	if !reflect.DeepEqual(apisV2, apisProto) {
		t.Errorf("protobuf aggregated /apis differs from JSON:\n%+v\n%+v", apisV2, apisProto)
	}
	if len(apisV2.Items) != 1 || apisV2.Items[0].Name != "coordination.k8s.io" {
		t.Fatalf("/apis aggregated groups = %+v, want coordination.k8s.io only", apisV2.Items)
	}
	versions := apisV2.Items[0].Versions
	if len(versions) != 2 || versions[0].Version != "v1" || versions[1].Version != "v1beta1" {
		t.Fatalf("coordination.k8s.io versions = %+v, want v1 (preferred) then v1beta1", versions)
	}
	lease := versions[0].Resources[0]
	if lease.Resource != "leases" || lease.Scope != apidiscoveryv2.ScopeNamespace || lease.SingularResource != "lease" ||
		lease.ResponseKind == nil || lease.ResponseKind.Kind != "Lease" || versions[0].Freshness != apidiscoveryv2.DiscoveryFreshnessCurrent {
		t.Errorf("lease entry = %+v", lease)
	}

	// v2beta1 carries the same content under the older apiVersion.
	var apisBeta apidiscoveryv2beta1.APIGroupDiscoveryList
	decode(t, d, get(t, d, "/apis", http.Header{"Accept": {v2beta1JSON}}), &apisBeta, "apidiscovery.k8s.io/v2beta1", "APIGroupDiscoveryList")
	a, _ := json.Marshal(apisV2.Items)
	b, _ := json.Marshal(apisBeta.Items)
	if string(a) != string(b) {
		t.Errorf("v2beta1 items differ from v2:\n%s\n%s", b, a)
	}

	var api apidiscoveryv2.APIGroupDiscoveryList
	decode(t, d, get(t, d, "/api", http.Header{"Accept": {v2JSON}}), &api, "apidiscovery.k8s.io/v2", "APIGroupDiscoveryList")
	if len(api.Items) != 1 || api.Items[0].Name != "" || len(api.Items[0].Versions) != 1 {
		t.Fatalf("/api aggregated = %+v, want the core group with v1", api.Items)
	}
	for _, r := range api.Items[0].Versions[0].Resources {
		wantSub := r.Resource == "nodes"
		if got := len(r.Subresources) == 1 && r.Subresources[0].Subresource == "status" &&
			reflect.DeepEqual(r.Subresources[0].Verbs, []string{"get", "patch", "update"}); got != wantSub {
			t.Errorf("%s subresources = %+v, want status only on nodes", r.Resource, r.Subresources)
		}
	}
}

func TestAggregatedETag(t *testing.T) {
	d := newTestDiscovery(t)
	first := get(t, d, "/apis", http.Header{"Accept": {v2JSON}})
	etag := first.Header().Get("ETag")
	if len(etag) < 3 || etag[0] != '"' || first.Header().Get("Vary") != "Accept" || first.Header().Get("Cache-Control") != "public" {
		t.Fatalf("headers = %v, want a quoted ETag, Vary: Accept, Cache-Control: public", first.Header())
	}
	if other := get(t, d, "/api", http.Header{"Accept": {v2JSON}}).Header().Get("ETag"); other == etag || other == "" {
		t.Errorf("/api ETag %q must exist and differ from /apis ETag %q", other, etag)
	}
	if again := New(testResources(), testInfo()); get(t, again, "/apis", http.Header{"Accept": {v2JSON}}).Header().Get("ETag") != etag {
		t.Errorf("ETag is not a function of the served resources")
	}

	revalidated := get(t, d, "/apis", http.Header{"Accept": {v2JSON}, "If-None-Match": {etag}})
	if revalidated.Code != http.StatusNotModified || revalidated.Body.Len() != 0 {
		t.Errorf("If-None-Match with the current ETag = %d with %d bytes, want 304 and no body", revalidated.Code, revalidated.Body.Len())
	}
	stale := get(t, d, "/apis", http.Header{"Accept": {v2JSON}, "If-None-Match": {`"stale"`}})
	if stale.Code != http.StatusOK || stale.Body.Len() == 0 {
		t.Errorf("If-None-Match with another ETag = %d, want 200 with the document", stale.Code)
	}
	if legacy := get(t, d, "/apis", http.Header{"Accept": {"application/json"}, "If-None-Match": {etag}}); legacy.Code != http.StatusOK {
		t.Errorf("legacy document answered %d to the aggregated ETag, want 200", legacy.Code)
	}
}

func TestLegacyDocumentDetails(t *testing.T) {
	d := New(testResources(), testInfo(), WithServerAddress("10.0.0.9:6443"))

	var versions metav1.APIVersions
	decode(t, d, get(t, d, "/api", nil), &versions, "", "APIVersions")
	want := []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: "10.0.0.9:6443"}}
	if !reflect.DeepEqual(versions.Versions, []string{"v1"}) || !reflect.DeepEqual(versions.ServerAddressByClientCIDRs, want) {
		t.Errorf("/api = %+v", versions)
	}

	var core metav1.APIResourceList
	decode(t, d, get(t, d, "/api/v1/", nil), &core, "", "APIResourceList")
	var names []string
	for _, r := range core.APIResources {
		names = append(names, r.Name)
	}
	if want := []string{"events", "namespaces", "nodes", "nodes/status"}; !reflect.DeepEqual(names, want) {
		t.Errorf("/api/v1 resources = %v, want %v (sorted, status after its resource)", names, want)
	}

	// The storage version hashes of real clusters (the resources are stored
	// in the version they are served in).
	var coord metav1.APIResourceList
	decode(t, d, get(t, d, "/apis/coordination.k8s.io/v1", nil), &coord, "v1", "APIResourceList")
	if len(coord.APIResources) != 1 || coord.APIResources[0].StorageVersionHash != "gqkMMb/YqFM=" {
		t.Errorf("leases discovery = %+v, want storageVersionHash gqkMMb/YqFM=", coord.APIResources)
	}
	for _, r := range core.APIResources {
		if want := map[string]string{"events": "r2yiGXH7wu8=", "namespaces": "Q3oi5N2YM8M=", "nodes": "XwShjMxG9Fs="}[r.Name]; r.StorageVersionHash != want {
			t.Errorf("%s storageVersionHash = %q, want %q", r.Name, r.StorageVersionHash, want)
		}
	}
}

func TestNotServed(t *testing.T) {
	d := newTestDiscovery(t)
	for _, path := range []string{"/apis/apps", "/apis/apps/v1", "/apis/coordination.k8s.io/v1alpha2", "/api/v2", "/apis/coordination.k8s.io/v1/leases/x", "/"} {
		w := get(t, d, path, nil)
		var status metav1.Status
		if err := json.Unmarshal(w.Body.Bytes(), &status); err != nil || w.Code != http.StatusNotFound || status.Reason != metav1.StatusReasonNotFound {
			t.Errorf("GET %s = %d %s, want a 404 NotFound Status", path, w.Code, w.Body)
		}
	}
	req := httptest.NewRequest(http.MethodPost, "/apis", strings.NewReader("{}"))
	w := httptest.NewRecorder()
	d.ServeHTTP(w, req)
	if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /apis = %d %v, want 405 with Allow", w.Code, w.Header())
	}
}

// TestConcurrentRequests runs requests in parallel so that -race would catch
// any document or encoder state shared between requests.
func TestConcurrentRequests(t *testing.T) {
	d := newTestDiscovery(t)
	accepts := []string{"", v2JSON, v2beta1JSON, v2Proto, protobuf, "application/yaml"}
	paths := []string{"/api", "/api/v1", "/apis", "/apis/coordination.k8s.io", "/apis/coordination.k8s.io/v1", "/version"}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				path, accept := paths[(i+j)%len(paths)], accepts[j%len(accepts)]
				h := http.Header{}
				if accept != "" {
					h.Set("Accept", accept)
				}
				if w := get(t, d, path, h); w.Code != http.StatusOK && w.Code != http.StatusNotAcceptable {
					t.Errorf("GET %s Accept %q = %d", path, accept, w.Code)
				}
			}
		})
	}
	wg.Wait()
}
