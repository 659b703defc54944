package openapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"

	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
)

func v3Index(t *testing.T, h http.Handler) handler3.OpenAPIV3Discovery {
	t.Helper()
	rec := get(t, h, "/openapi/v3", "application/json")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /openapi/v3: %d", rec.Code)
	}
	var idx handler3.OpenAPIV3Discovery
	if err := json.Unmarshal(rec.Body.Bytes(), &idx); err != nil {
		t.Fatalf("index is not JSON: %v", err)
	}
	return idx
}

func TestV3Index(t *testing.T) {
	o := newTestOpenAPI(t)
	idx := v3Index(t, o.Handler())
	var got []string
	for name, gv := range idx.Paths {
		got = append(got, name)
		u, err := url.Parse(gv.ServerRelativeURL)
		if err != nil || u.Path != "/openapi/v3/"+name || u.Query().Get("hash") == "" {
			t.Errorf("%s: serverRelativeURL %q", name, gv.ServerRelativeURL)
		}
	}
	sort.Strings(got)
	want := []string{"api", "api/v1", "apis", "apis/coordination.k8s.io", "apis/coordination.k8s.io/v1",
		"apis/coordination.k8s.io/v1beta1", "version"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("index lists %v, want %v", got, want)
	}
}

func TestV3Documents(t *testing.T) {
	o := newTestOpenAPI(t)
	h := o.Handler()
	idx := v3Index(t, h)

	// Each document at its hashed URL is immutable and holds its own
	// group version's paths with the parameters kubectl checks for.
	checks := map[string]struct{ patchPath, schema string }{
		"apis/coordination.k8s.io/v1": {
			"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}", "io.k8s.api.coordination.v1.Lease"},
		"apis/coordination.k8s.io/v1beta1": {
			"/apis/coordination.k8s.io/v1beta1/namespaces/{namespace}/leasecandidates/{name}", "io.k8s.api.coordination.v1beta1.LeaseCandidate"},
		"api/v1": {"/api/v1/nodes/{name}/status", "io.k8s.api.core.v1.Node"},
	}
	for name, c := range checks {
		u := idx.Paths[name].ServerRelativeURL
		rec := get(t, h, u, "application/json")
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d", u, rec.Code)
		}
		if cc := rec.Header().Get("Cache-Control"); !strings.Contains(cc, "immutable") {
			t.Errorf("%s: Cache-Control %q", u, cc)
		}
		var doc spec3.OpenAPI
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
			t.Fatalf("%s: not an OpenAPI v3 document: %v", u, err)
		}
		item, ok := doc.Paths.Paths[c.patchPath]
		if !ok || item.Patch == nil {
			t.Fatalf("%s: no PATCH %s", name, c.patchPath)
		}
		names := map[string]string{}
		for _, p := range item.Patch.Parameters {
			names[p.Name] = p.In
		}
		for _, p := range []string{"fieldValidation", "fieldManager", "dryRun", "force"} {
			if names[p] != "query" {
				t.Errorf("%s: PATCH %s lacks query parameter %s (has %v)", name, c.patchPath, p, names)
			}
		}
		if item.Patch.RequestBody == nil || item.Patch.RequestBody.Content["application/apply-patch+yaml"] == nil {
			t.Errorf("%s: PATCH %s does not accept apply patches", name, c.patchPath)
		}
		if _, ok := item.Patch.Extensions[extensionGVK]; !ok {
			t.Errorf("%s: PATCH %s lacks %s", name, c.patchPath, extensionGVK)
		}
		s, ok := doc.Components.Schemas[c.schema]
		if !ok {
			t.Fatalf("%s: no schema %s", name, c.schema)
		}
		if _, ok := s.Extensions[extensionGVK]; !ok {
			t.Errorf("%s: schema %s lacks %s", name, c.schema, extensionGVK)
		}
		for p := range doc.Paths.Paths {
			if !strings.HasPrefix(p, "/"+name+"/") {
				t.Errorf("%s: holds foreign path %s", name, p)
			}
		}
	}

	// A stale hash redirects to the current one; an unknown document is 404.
	if rec := get(t, h, "/openapi/v3/apis/coordination.k8s.io/v1?hash=stale", "application/json"); rec.Code != http.StatusMovedPermanently ||
		rec.Header().Get("Location") != idx.Paths["apis/coordination.k8s.io/v1"].ServerRelativeURL {
		t.Errorf("stale hash: %d Location %q", rec.Code, rec.Header().Get("Location"))
	}
	if rec := get(t, h, "/openapi/v3/apis/apps/v1", "application/json"); rec.Code != http.StatusNotFound {
		t.Errorf("unknown document: %d, want 404", rec.Code)
	}
}

func TestV3Protobuf(t *testing.T) {
	o := newTestOpenAPI(t)
	rec := get(t, o.Handler(), "/openapi/v3/apis/coordination.k8s.io/v1", MIMEProtobufV3)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET v3 as protobuf: %d", rec.Code)
	}
	var doc openapi_v3.Document
	if err := proto.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatalf("gnostic cannot decode the v3 protobuf document: %v", err)
	}
	found := false
	for _, p := range doc.GetPaths().GetPath() {
		if p.GetName() == "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}" && p.GetValue().GetPatch() != nil {
			found = true
		}
	}
	if !found {
		t.Errorf("protobuf v3 document lacks the lease item path")
	}
}
