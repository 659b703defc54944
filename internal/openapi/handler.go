package openapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/NYTimes/gziphandler"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

const (
	pathV2 = "/openapi/v2"
	pathV3 = "/openapi/v3"

	// MIMEProtobufV2 and MIMEProtobufV3 are what kubectl and client-go send
	// in Accept to get the gnostic protobuf form of the documents.
	MIMEProtobufV2 = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
	MIMEProtobufV3 = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"
)

// getOnly adapts a ServeMux to kube-openapi's PathHandler interface,
// registering GET (and so HEAD) patterns; other methods get 405.
type getOnly struct{ mux *http.ServeMux }

func (g getOnly) Handle(path string, h http.Handler) { g.mux.Handle("GET "+path, h) }

// newHandler serves the documents with kube-openapi's handlers, which
// marshal lazily and cache; it then requests every document in every
// encoding once, so that the marshalling (and the protobuf conversion, which
// can fail) happens here rather than on the first client request.
func newHandler(v2 *spec.Swagger, v3 map[string]*spec3.OpenAPI) (http.Handler, error) {
	mux := http.NewServeMux()
	handler.NewOpenAPIService(v2).RegisterOpenAPIVersionedService(pathV2, getOnly{mux})

	v3svc := handler3.NewOpenAPIService()
	for name, doc := range v3 {
		v3svc.UpdateGroupVersion(name, doc)
	}
	mux.HandleFunc("GET "+pathV3, v3svc.HandleDiscovery)
	// handler3 answers an unknown document with an empty 200; a missing
	// document is a 404, as in kube-apiserver.
	mux.Handle("GET "+pathV3+"/", gziphandler.GzipHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := v3[strings.TrimPrefix(r.URL.Path, pathV3+"/")]; !ok {
			http.NotFound(w, r)
			return
		}
		v3svc.HandleGroupVersion(w, r)
	})))

	warm := []struct{ path, accept string }{
		{pathV2, "application/json"},
		{pathV2, MIMEProtobufV2},
		{pathV3, "application/json"},
	}
	for name := range v3 {
		warm = append(warm,
			struct{ path, accept string }{pathV3 + "/" + name, "application/json"},
			struct{ path, accept string }{pathV3 + "/" + name, MIMEProtobufV3})
	}
	for _, w := range warm {
		req := httptest.NewRequest(http.MethodGet, w.path, nil)
		req.Header.Set("Accept", w.accept)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || rec.Body.Len() == 0 {
			return nil, fmt.Errorf("openapi: serving %s as %s: status %d, %d bytes", w.path, w.accept, rec.Code, rec.Body.Len())
		}
	}
	return mux, nil
}
