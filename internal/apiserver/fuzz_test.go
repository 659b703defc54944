package apiserver_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// The fuzz targets send fuzzed requests straight to the request path (see
// fuzzServer) and check, for every answer: never a panic or a 5xx (other
// than 504 for a resourceVersion that never comes), every 4xx is a Status
// with the same code, and a successful write is what a later GET returns.
// Their seeds run as ordinary tests; TestFuzzShortRuns fuzzes each briefly.

// FuzzCreate posts fuzzed bodies in each encoding.
func FuzzCreate(f *testing.F) {
	for mt, bodies := range leaseBodies(f, "fuzz-create") {
		for _, b := range bodies {
			for fv := range fieldValidations {
				f.Add(uint8(indexOf(bodyTypes, mt)), uint8(fv), b)
			}
		}
	}
	f.Add(uint8(4), uint8(0), []byte{0xa1, 0x61, 0x61, 0x01})
	s := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, ct, fv uint8, body []byte) {
		contentType := pick(bodyTypes, ct)
		resp := s.do(t, fuzzRequest{
			method: http.MethodPost, path: leasesPath, rawQuery: fieldValidationQuery(pick(fieldValidations, fv)),
			contentType: contentType, accept: acceptFor(contentType), body: body,
		})
		if resp.code != http.StatusCreated {
			return
		}
		created := s.lease(t, "create", resp)
		s.roundTrip(t, "create", created)
		// Delete it so the next input can create the same name.
		del := s.do(t, fuzzRequest{method: http.MethodDelete, path: leasesPath + "/" + created.Name})
		if del.code != http.StatusOK {
			t.Fatalf("deleting created %s: %d %s", created.Name, del.code, truncate(del.body))
		}
		if get := s.do(t, fuzzRequest{method: http.MethodGet, path: leasesPath + "/" + created.Name}); get.code != http.StatusNotFound {
			t.Fatalf("GET of deleted %s answered %d", created.Name, get.code)
		}
	})
}

// FuzzUpdate puts fuzzed bodies in each encoding over an existing lease.
func FuzzUpdate(f *testing.F) {
	const name = "fuzz-update"
	for mt, bodies := range leaseBodies(f, name) {
		for _, b := range bodies {
			f.Add(uint8(indexOf(bodyTypes, mt)), uint8(0), b)
		}
	}
	f.Add(uint8(0), uint8(1), []byte(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"other"}}`))
	f.Add(uint8(0), uint8(1), []byte(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"fuzz-update","uid":"00000000-0000-0000-0000-000000000000"}}`))
	s := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, ct, fv uint8, body []byte) {
		s.ensureLease(t, name)
		contentType := pick(bodyTypes, ct)
		resp := s.do(t, fuzzRequest{
			method: http.MethodPut, path: leasesPath + "/" + name, rawQuery: fieldValidationQuery(pick(fieldValidations, fv)),
			contentType: contentType, accept: acceptFor(contentType), body: body,
		})
		if resp.code == http.StatusOK || resp.code == http.StatusCreated {
			s.roundTrip(t, "update", s.lease(t, "update", resp))
		}
	})
}

// patchTypes are the patch Content-Types, plus ones the server must refuse.
var patchTypes = []string{
	"application/json-patch+json",
	"application/merge-patch+json",
	"application/strategic-merge-patch+json",
	"application/apply-patch+yaml",
	"application/apply-patch+cbor",
	"application/json",
}

// FuzzPatch sends fuzzed patch bodies of each patch type.
func FuzzPatch(f *testing.F) {
	const name = "fuzz-patch"
	seeds := map[int][]string{
		0: {`[{"op":"replace","path":"/spec/holderIdentity","value":"b"}]`, `[{"op":"add","path":"/metadata/labels/x","value":"y"},{"op":"remove","path":"/spec/renewTime"}]`,
			`[{"op":"test","path":"/spec/leaseTransitions","value":3}]`, `[{"op":"move","from":"/spec","path":"/spec/x"}]`, `[{"op":"replace","path":"/metadata/name","value":"z"}]`},
		1: {`{"spec":{"holderIdentity":"m","leaseDurationSeconds":7}}`, `{"metadata":{"labels":{"app":null}},"spec":null}`, `{"metadata":{"resourceVersion":"1"}}`, `{"kind":"Namespace"}`},
		2: {`{"metadata":{"labels":{"$patch":"replace","k":"v"}},"spec":{"holderIdentity":"s"}}`, `{"$retainKeys":["spec"],"spec":{"leaseTransitions":9}}`, `{"spec":{"$patch":"delete"}}`},
		3: {"apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: fuzz-patch\nspec:\n  holderIdentity: applied\n",
			"apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: other\n", "{}", "apiVersion: v1\nkind: Lease\n"},
		4: {"\xa1\x64kind\x65Lease"},
		5: {`{"spec":{}}`},
	}
	for pt, bodies := range seeds {
		for _, b := range bodies {
			f.Add(uint8(pt), pt == 3, []byte(b))
			f.Add(uint8(pt), false, []byte(b))
		}
	}
	s := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, pt uint8, force bool, body []byte) {
		s.ensureLease(t, name)
		q := url.Values{"fieldManager": {"fuzz"}}
		if force {
			q.Set("force", "true")
		}
		resp := s.do(t, fuzzRequest{
			method: http.MethodPatch, path: leasesPath + "/" + name, rawQuery: q.Encode(),
			contentType: pick(patchTypes, pt), accept: "application/json", body: body,
		})
		if resp.code == http.StatusOK || resp.code == http.StatusCreated {
			s.roundTrip(t, "patch", s.lease(t, "patch", resp))
		}
	})
}

// listAccepts are the Accept headers the list fuzzer picks from.
var listAccepts = []string{
	"",
	"application/json",
	"application/vnd.kubernetes.protobuf",
	"application/yaml",
	"application/json;as=Table;v=v1;g=meta.k8s.io",
	"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
	"application/vnd.kubernetes.protobuf;stream=watch",
	"text/html",
}

// FuzzListQuery lists and watches leases with fuzzed selectors and paging,
// resourceVersion and timeout parameters.
func FuzzListQuery(f *testing.F) {
	type seed struct {
		label, field, rv, rvMatch, limit, cont, timeout string
	}
	for i, sd := range []seed{
		{"", "", "", "", "", "", ""},
		{"app=fuzz", "metadata.name=list-1", "0", "", "2", "", ""},
		{"app in (fuzz,x),!gone,tier notin (y)", "metadata.namespace!=kube-system", "", "", "1", "", "1"},
		{"app", "spec.holderIdentity=h", "1", "NotOlderThan", "", "", ""},
		{"", "", "1", "Exact", "1", "", ""},
		{"", "", "", "", "1", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJhIn0", ""},
		{"a=b=c", "x==y,", "-1", "Bogus", "-5", "%%%", "-1"},
		{"", "", "99999999999", "", "", "", "0"},
	} {
		for _, cluster := range []bool{false, true} {
			f.Add(cluster, i%3 == 2, uint8(i), sd.label, sd.field, sd.rv, sd.rvMatch, sd.limit, sd.cont, sd.timeout)
		}
	}
	// A JSON watch from the start replays the seeded leases as frames.
	f.Add(false, true, uint8(1), "app=fuzz", "", "0", "", "", "", "")
	// A watch whose time is up before it starts is an empty 200 stream.
	f.Add(false, true, uint8(1), "", "", "", "", "", "", "-1")
	s := newFuzzServer(f)
	for i := range 4 {
		s.ensureLease(f, fmt.Sprintf("list-%d", i))
	}
	f.Fuzz(func(t *testing.T, cluster, watchParam bool, accept uint8, label, field, rv, rvMatch, limit, cont, timeout string) {
		q := url.Values{}
		for k, v := range map[string]string{"labelSelector": label, "fieldSelector": field, "resourceVersion": rv,
			"resourceVersionMatch": rvMatch, "limit": limit, "continue": cont, "timeoutSeconds": timeout} {
			if v != "" {
				q.Set(k, v)
			}
		}
		if watchParam {
			q.Set("watch", "true")
		}
		path := leasesPath
		if cluster {
			path = "/apis/coordination.k8s.io/v1/leases"
		}
		resp := s.do(t, fuzzRequest{method: http.MethodGet, path: path, rawQuery: q.Encode(), accept: pick(listAccepts, accept)})
		if resp.code != http.StatusOK {
			return
		}
		if err := s.checkListBody(resp); err != nil {
			t.Fatalf("GET %s?%s (Accept %q): %v: %q", path, q.Encode(), pick(listAccepts, accept), err, truncate(resp.body))
		}
	})
}

// checkListBody decodes a 200 list or watch answer.
func (s *fuzzServer) checkListBody(resp fuzzResponse) error {
	ct := resp.header.Get("Content-Type")
	switch {
	case strings.Contains(ct, "stream=watch") || (strings.HasPrefix(ct, "application/json") && bytes.HasPrefix(resp.body, []byte(`{"type":`))):
		if !strings.HasPrefix(ct, "application/json") {
			return nil // protobuf frames: the stream decoder is client-go's, exercised elsewhere
		}
		dec := json.NewDecoder(bytes.NewReader(resp.body))
		for {
			var ev metav1.WatchEvent
			if err := dec.Decode(&ev); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return fmt.Errorf("watch frame: %w", err)
			}
			switch watch.EventType(ev.Type) {
			case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark, watch.Error:
			default:
				return fmt.Errorf("watch event type %q", ev.Type)
			}
		}
	default:
		obj, _, err := s.decoder.Decode(resp.body, nil, nil)
		if err != nil {
			return fmt.Errorf("decoding %s: %w", ct, err)
		}
		switch obj.(type) {
		case *coordinationv1.LeaseList, *metav1.Table, *metav1.PartialObjectMetadataList:
			return nil
		}
		return fmt.Errorf("a list answer decoded to %T", obj)
	}
}

// FuzzRequest sends fully fuzzed requests (method, path, query,
// Content-Type, body) and checks after each that every lease a list shows
// is what a GET of it shows.
func FuzzRequest(f *testing.F) {
	lease := encode(f, "application/json", seedLease("req"))
	for _, sd := range []struct {
		method          uint8
		path, query, ct string
		body            []byte
	}{
		{0, "namespaces/default/leases", "", "", nil},
		{1, "namespaces/default/leases", "dryRun=All", "application/json", lease},
		{1, "namespaces/default/leases", "", "application/json", lease},
		{2, "namespaces/default/leases/req", "fieldManager=x", "application/json", lease},
		{3, "namespaces/default/leases/req", "", "application/merge-patch+json", []byte(`{"spec":{"holderIdentity":"p"}}`)},
		{4, "namespaces/default/leases/req", "gracePeriodSeconds=0&propagationPolicy=Foreground", "application/json", []byte(`{"preconditions":{"resourceVersion":"1"}}`)},
		{4, "namespaces/default/leases", "labelSelector=app%3Dfuzz", "", nil},
		{0, "namespaces/default/leases/req/status", "", "", nil},
		{0, "watch/namespaces/default/leases", "timeoutSeconds=1", "", nil},
		{2, "namespaces/kube-system/leases/req", "", "application/yaml", []byte("apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: req\n")},
		{5, "namespaces/default/leases", "", "", nil},
		{0, "..%2f..%2fnamespaces", "", "", nil},
		{8, "namespaces", "", "application/json", []byte(`{"metadata":{"name":"n1"}}`)},
		{9, "namespaces/n1", "", "", nil},
	} {
		f.Add(sd.method, sd.path, sd.query, sd.ct, sd.body)
	}
	s := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, m uint8, pathSuffix, rawQuery, contentType string, body []byte) {
		if strings.ContainsAny(rawQuery, " #\x7f") || strings.ContainsFunc(rawQuery+pathSuffix+contentType, func(r rune) bool { return r < 0x20 }) {
			return // no HTTP/1.1 or HTTP/2 request can carry these
		}
		methods := []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions, "CONNECT"}
		prefix := "/apis/coordination.k8s.io/v1/"
		if m >= 8 {
			prefix = "/api/v1/"
		}
		s.do(t, fuzzRequest{method: pick(methods, m), path: prefix + pathSuffix, rawQuery: rawQuery, contentType: contentType, body: body})
		s.checkConsistent(t)
	})
}

// checkConsistent lists every lease and GETs each one: both are served by
// the cache, and must agree on every object's resourceVersion and content.
func (s *fuzzServer) checkConsistent(t *testing.T) {
	t.Helper()
	resp := s.do(t, fuzzRequest{method: http.MethodGet, path: "/apis/coordination.k8s.io/v1/leases", accept: "application/json"})
	if resp.code != http.StatusOK {
		t.Fatalf("listing leases after the request: %d %s", resp.code, truncate(resp.body))
	}
	obj, _, err := s.decoder.Decode(resp.body, nil, nil)
	if err != nil {
		t.Fatalf("decoding the lease list: %v", err)
	}
	leases, ok := obj.(*coordinationv1.LeaseList)
	if !ok {
		t.Fatalf("the lease list decoded to %T", obj)
	}
	namespaces := map[string]bool{}
	for i := range leases.Items {
		s.roundTrip(t, "list", &leases.Items[i])
		namespaces[leases.Items[i].Namespace] = true
	}
	// Keep the store small so every input is checked in bounded time.
	if len(leases.Items) > maxFuzzLeases {
		for ns := range namespaces {
			del := s.do(t, fuzzRequest{method: http.MethodDelete, path: "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases"})
			if del.code != http.StatusOK {
				t.Fatalf("deleting the leases of %s: %d %s", ns, del.code, truncate(del.body))
			}
		}
	}
}

// maxFuzzLeases bounds the leases FuzzRequest lets pile up.
const maxFuzzLeases = 30

func fieldValidationQuery(v string) string {
	if v == "" {
		return ""
	}
	return url.Values{"fieldValidation": {v}}.Encode()
}

func indexOf(xs []string, x string) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	panic("no " + x)
}
