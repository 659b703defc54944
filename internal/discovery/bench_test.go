package discovery

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// Discovery runs on every kubectl invocation whose cache is cold, so its cost
// per request is worth knowing; these benchmarks exclude the network.
func benchmarkGet(b *testing.B, path, accept string) {
	d := New(testResources(), testInfo())
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Accept", accept)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		d.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("GET %s = %d", path, w.Code)
		}
	}
}

func BenchmarkAggregatedAPIsJSON(b *testing.B) {
	benchmarkGet(b, "/apis", v2JSON+",application/json")
}

func BenchmarkAggregatedAPIProtobuf(b *testing.B) {
	benchmarkGet(b, "/api", v2Proto)
}

func BenchmarkLegacyResourceListJSON(b *testing.B) {
	benchmarkGet(b, "/apis/coordination.k8s.io/v1", "application/json")
}
