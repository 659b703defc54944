package openapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func BenchmarkNew(b *testing.B) {
	set := testSet()
	for b.Loop() {
		if _, err := New(set, "v1.33.0"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServe measures the request-time cost of the documents: a full
// v2 protobuf body, and the revalidation kubectl does with If-None-Match.
func BenchmarkServe(b *testing.B) {
	o := newTestOpenAPI(b)
	h := o.Handler()
	first := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/openapi/v2", nil)
	req.Header.Set("Accept", MIMEProtobufV2)
	h.ServeHTTP(first, req)
	b.Logf("v2 protobuf %d bytes", first.Body.Len())
	etag := first.Header().Get("Etag")

	b.Run("v2-protobuf", func(b *testing.B) {
		for b.Loop() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
		}
	})
	b.Run("v2-not-modified", func(b *testing.B) {
		r := req.Clone(req.Context())
		r.Header.Set("If-None-Match", etag)
		for b.Loop() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != http.StatusNotModified {
				b.Fatalf("status %d", rec.Code)
			}
		}
	})
	b.Run("v3-lease-json", func(b *testing.B) {
		r := httptest.NewRequest(http.MethodGet, "/openapi/v3/apis/coordination.k8s.io/v1", nil)
		r.Header.Set("Accept", "application/json")
		for b.Loop() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
		}
	})
}
