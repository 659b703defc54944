package apiserver

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzSplitPath checks splitPath against the strings.Split it replaces.
func FuzzSplitPath(f *testing.F) {
	for _, p := range []string{"", "/", "//", "/api/v1", "/apis/g/v/namespaces/ns/r/n/status", "a//b/", "/1/2/3/4/5/6/7/8/9", "/1/2/3/4/5/6/7/8/9/10"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		var buf [maxPathParts]string
		got, ok := splitPath(p, &buf)
		var want []string
		if trimmed := strings.Trim(p, "/"); trimmed != "" {
			want = strings.Split(trimmed, "/")
		}
		if len(want) > maxPathParts {
			if ok {
				t.Fatalf("splitPath(%q) = %q, want ok=false for %d segments", p, got, len(want))
			}
			return
		}
		if !ok || strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
			t.Fatalf("splitPath(%q) = %q, %v; want %q", p, got, ok, want)
		}
	})
}

func TestParseRequestInfo(t *testing.T) {
	for _, tc := range []struct {
		method, target string
		want           requestInfo
		ok             bool
	}{
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-1",
			requestInfo{group: "coordination.k8s.io", version: "v1", namespace: "kube-node-lease", resource: "leases", name: "node-1", verb: "update"}, true},
		{"GET", "/api/v1/nodes?watch=true", requestInfo{version: "v1", resource: "nodes", verb: "watch"}, true},
		{"GET", "/api/v1/watch/namespaces/default/events/e1", requestInfo{version: "v1", namespace: "default", resource: "events", name: "e1", verb: "watch"}, true},
		{"PATCH", "/api/v1/namespaces/n1/status", requestInfo{version: "v1", resource: "namespaces", name: "n1", subresource: "status", verb: "patch"}, true},
		{"DELETE", "/apis/coordination.k8s.io/v1/namespaces/default/leases", requestInfo{group: "coordination.k8s.io", version: "v1", namespace: "default", resource: "leases", verb: "deletecollection"}, true},
		{"GET", "/apis/g/v/watch/namespaces/ns/r/n/status", requestInfo{group: "g", version: "v", namespace: "ns", resource: "r", name: "n", subresource: "status", verb: "watch"}, true},
		{"GET", "/apis/g/v/watch/namespaces/ns/r/n/status/extra", requestInfo{}, false},
		{"GET", "/healthz", requestInfo{}, false},
	} {
		got, ok := parseRequestInfo(httptest.NewRequest(tc.method, tc.target, nil))
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("%s %s: got %+v, %v; want %+v, %v", tc.method, tc.target, got, ok, tc.want, tc.ok)
		}
	}
	put := httptest.NewRequest("PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-1", nil)
	if n := testing.AllocsPerRun(100, func() { parseRequestInfo(put) }); n != 0 {
		t.Errorf("parsing a renewal's request allocates %v times", n)
	}
}
