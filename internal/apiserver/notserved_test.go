package apiserver_test

import (
	"net/http"
	"testing"
)

// TestResourceNotServed: any request for a resource, or group version, the
// server does not serve is kube-apiserver's 404 of an unknown path, naming
// no object, whether or not the URL names one.
func TestResourceNotServed(t *testing.T) {
	const body = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}`
	h := newDirectHandler(t)
	for _, tc := range []struct{ method, path string }{
		{"GET", "/api/v1/namespaces/default/widgets/w1"},
		{"GET", "/api/v1/namespaces/default/widgets"},
		{"GET", "/api/v1/widgets?watch=True"},
		{"PUT", "/api/v1/namespaces/default/widgets/w1"},
		{"GET", "/apis/no.such.group/v1/namespaces/default/leases/l1"},
		{"GET", "/apis/coordination.k8s.io/v9/namespaces/default/leases"},
	} {
		wantResponse(t, send(h.api, tc.method, tc.path, ""), http.StatusNotFound, body)
	}
}
