package openapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
)

// get performs one request against h and returns the recorder.
func get(t *testing.T, h http.Handler, path, accept string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// v2Doc is the part of a swagger document the tests read.
type v2Doc struct {
	Info        map[string]interface{}                `json:"info"`
	Paths       map[string]map[string]json.RawMessage `json:"paths"`
	Definitions map[string]map[string]interface{}     `json:"definitions"`
	Parameters  map[string]v2Param                    `json:"parameters"`
}

type v2Param struct {
	Ref  string `json:"$ref"`
	Name string `json:"name"`
	In   string `json:"in"`
	Type string `json:"type"`
}

type v2Op struct {
	OperationID string                 `json:"operationId"`
	Action      string                 `json:"x-kubernetes-action"`
	GVK         map[string]string      `json:"x-kubernetes-group-version-kind"`
	Parameters  []v2Param              `json:"parameters"`
	Consumes    []string               `json:"consumes"`
	Responses   map[string]interface{} `json:"responses"`
}

// op decodes one operation; parameters shared through the document's
// top-level "parameters" (the builder deduplicates them) are resolved.
func (d *v2Doc) op(t *testing.T, path, method string) v2Op {
	t.Helper()
	raw, ok := d.Paths[path][method]
	if !ok {
		t.Fatalf("no %s %s in v2 document", method, path)
	}
	var o v2Op
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatalf("decoding %s %s: %v", method, path, err)
	}
	for i, p := range o.Parameters {
		if p.Ref != "" {
			o.Parameters[i] = d.Parameters[strings.TrimPrefix(p.Ref, "#/parameters/")]
		}
	}
	return o
}

func hasParam(ps []v2Param, name, in string) bool {
	for _, p := range ps {
		if p.Name == name && p.In == in {
			return true
		}
	}
	return false
}

func TestV2JSON(t *testing.T) {
	o := newTestOpenAPI(t)
	rec := get(t, o.Handler(), "/openapi/v2", "application/json")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /openapi/v2: %d %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var d v2Doc
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil {
		t.Fatalf("v2 document is not JSON: %v", err)
	}
	if d.Info["version"] != "v1.33.0" || d.Info["title"] != "Kubernetes" {
		t.Errorf("info = %v", d.Info)
	}

	lease, ok := d.Definitions["io.k8s.api.coordination.v1.Lease"]
	if !ok {
		t.Fatalf("no io.k8s.api.coordination.v1.Lease definition")
	}
	gvk, _ := json.Marshal(lease["x-kubernetes-group-version-kind"])
	if string(gvk) != `[{"group":"coordination.k8s.io","kind":"Lease","version":"v1"}]` {
		t.Errorf("Lease x-kubernetes-group-version-kind = %s", gvk)
	}
	spec, _ := json.Marshal(d.Definitions["io.k8s.api.coordination.v1.LeaseSpec"]["properties"])
	for _, field := range []string{"holderIdentity", "leaseDurationSeconds", "renewTime", "leaseTransitions", "strategy", "preferredHolder"} {
		if !strings.Contains(string(spec), `"`+field+`"`) {
			t.Errorf("LeaseSpec lacks %s: %s", field, spec)
		}
	}
	for _, def := range []string{"io.k8s.api.core.v1.Node", "io.k8s.api.core.v1.Namespace", "io.k8s.api.core.v1.Event",
		"io.k8s.api.coordination.v1beta1.LeaseCandidate", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
		"io.k8s.apimachinery.pkg.apis.meta.v1.Status", "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent",
		"io.k8s.apimachinery.pkg.version.Info"} {
		if _, ok := d.Definitions[def]; !ok {
			t.Errorf("no %s definition", def)
		}
	}

	item := "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"
	patch := d.op(t, item, "patch")
	if patch.OperationID != "patchCoordinationV1NamespacedLease" || patch.Action != "patch" {
		t.Errorf("patch op = %+v", patch)
	}
	if patch.GVK["group"] != "coordination.k8s.io" || patch.GVK["version"] != "v1" || patch.GVK["kind"] != "Lease" {
		t.Errorf("patch GVK = %v", patch.GVK)
	}
	for _, p := range []string{"dryRun", "fieldManager", "fieldValidation", "force"} {
		if !hasParam(patch.Parameters, p, "query") {
			t.Errorf("patch lacks query parameter %s: %+v", p, patch.Parameters)
		}
	}
	if !hasParam(patch.Parameters, "body", "body") {
		t.Errorf("patch lacks its body parameter")
	}
	if !strings.Contains(strings.Join(patch.Consumes, ","), "application/apply-patch+yaml") {
		t.Errorf("patch consumes %v", patch.Consumes)
	}

	list := d.op(t, "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases", "get")
	if list.OperationID != "listCoordinationV1NamespacedLease" || list.Action != "list" {
		t.Errorf("list op = %+v", list)
	}
	// The list selectors are common to every operation on the
	// all-namespaces path, so the builder moves them to the path item.
	var all map[string]json.RawMessage = d.Paths["/apis/coordination.k8s.io/v1/leases"]
	var pathParams []v2Param
	if err := json.Unmarshal(all["parameters"], &pathParams); err != nil {
		t.Fatalf("path parameters: %v", err)
	}
	for i, p := range pathParams {
		if p.Ref != "" {
			pathParams[i] = d.Parameters[strings.TrimPrefix(p.Ref, "#/parameters/")]
		}
	}
	for _, p := range []string{"labelSelector", "fieldSelector", "limit", "continue", "resourceVersion",
		"resourceVersionMatch", "watch", "allowWatchBookmarks", "sendInitialEvents", "timeoutSeconds"} {
		if !hasParam(pathParams, p, "query") {
			t.Errorf("/leases lacks %s", p)
		}
	}

	wantOps := map[string][2]string{
		"createCoordinationV1NamespacedLease":             {"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases", "post"},
		"deleteCoordinationV1CollectionNamespacedLease":   {"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases", "delete"},
		"readCoordinationV1NamespacedLease":               {item, "get"},
		"replaceCoordinationV1NamespacedLease":            {item, "put"},
		"deleteCoordinationV1NamespacedLease":             {item, "delete"},
		"listCoordinationV1LeaseForAllNamespaces":         {"/apis/coordination.k8s.io/v1/leases", "get"},
		"watchCoordinationV1NamespacedLeaseList":          {"/apis/coordination.k8s.io/v1/watch/namespaces/{namespace}/leases", "get"},
		"readCoreV1NodeStatus":                            {"/api/v1/nodes/{name}/status", "get"},
		"patchCoreV1NodeStatus":                           {"/api/v1/nodes/{name}/status", "patch"},
		"listCoreV1Namespace":                             {"/api/v1/namespaces", "get"},
		"listCoordinationV1beta1NamespacedLeaseCandidate": {"/apis/coordination.k8s.io/v1beta1/namespaces/{namespace}/leasecandidates", "get"},
		"getCoordinationV1APIResources":                   {"/apis/coordination.k8s.io/v1/", "get"},
		"getCoordinationAPIGroup":                         {"/apis/coordination.k8s.io/", "get"},
		"getCoreAPIVersions":                              {"/api/", "get"},
		"getCodeVersion":                                  {"/version/", "get"},
		"watchCoreV1EventListForAllNamespaces":            {"/api/v1/watch/events", "get"},
	}
	for id, at := range wantOps {
		if got := d.op(t, at[0], at[1]).OperationID; got != id {
			t.Errorf("%s %s: operationId %q, want %q", at[1], at[0], got, id)
		}
	}
	if _, ok := d.Paths["/api/v1/namespaces/{namespace}/nodes"]; ok {
		t.Errorf("cluster-scoped nodes published under a namespace")
	}
	if _, ok := d.Paths["/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}/status"]; ok {
		t.Errorf("leases have no status subresource but one is published")
	}

	// The ETag makes a repeated fetch free.
	etag := rec.Header().Get("Etag")
	if etag == "" {
		t.Fatalf("no ETag")
	}
	if again := get(t, o.Handler(), "/openapi/v2", "application/json", "If-None-Match", etag); again.Code != http.StatusNotModified {
		t.Errorf("If-None-Match: status %d, want 304", again.Code)
	}
}

func TestV2Protobuf(t *testing.T) {
	o := newTestOpenAPI(t)
	rec := get(t, o.Handler(), "/openapi/v2", MIMEProtobufV2)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /openapi/v2 as protobuf: %d", rec.Code)
	}
	var doc openapi_v2.Document
	if err := proto.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatalf("gnostic cannot decode the protobuf document: %v", err)
	}
	var lease *openapi_v2.Schema
	for _, d := range doc.GetDefinitions().GetAdditionalProperties() {
		if d.GetName() == "io.k8s.api.coordination.v1.Lease" {
			lease = d.GetValue()
		}
	}
	if lease == nil {
		t.Fatalf("protobuf document has no Lease definition")
	}
	found := false
	for _, ext := range lease.GetVendorExtension() {
		if ext.GetName() == extensionGVK && strings.Contains(ext.GetValue().GetYaml(), "coordination.k8s.io") {
			found = true
		}
	}
	if !found {
		t.Errorf("protobuf Lease definition lacks %s: %v", extensionGVK, lease.GetVendorExtension())
	}
	if doc.GetInfo().GetVersion() != "v1.33.0" {
		t.Errorf("info.version = %q", doc.GetInfo().GetVersion())
	}
}

func TestOnlyGET(t *testing.T) {
	o := newTestOpenAPI(t)
	for _, path := range []string{"/openapi/v2", "/openapi/v3", "/openapi/v3/api/v1"} {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader("{}"))
		rec := httptest.NewRecorder()
		o.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("POST %s: %d, want 405", path, rec.Code)
		}
	}
}
