package discovery

import (
	"net/http"
	"testing"
)

const (
	v2JSON      = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	v2beta1JSON = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
	v2Proto     = "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	protobuf    = "application/vnd.kubernetes.protobuf"
)

func TestNegotiation(t *testing.T) {
	d := newTestDiscovery(t)
	for _, tc := range []struct {
		name, path, accept string
		code               int
		contentType        string
	}{
		{"no Accept gets JSON", "/apis", "", 200, "application/json"},
		{"plain JSON gets the legacy list", "/apis", "application/json", 200, "application/json"},
		{"client-go v0.37 default", "/apis", v2JSON + ",application/json", 200, v2JSON},
		{"client-go v0.37 nopeer profile", "/apis", v2JSON + ";profile=nopeer," + v2JSON + ",application/json", 200, v2JSON},
		{"client-go 1.30-1.32", "/api", v2JSON + "," + v2beta1JSON + ",application/json", 200, v2JSON},
		{"client-go 1.27-1.29", "/api", v2beta1JSON + ",application/json", 200, v2beta1JSON},
		{"order decides at equal q", "/apis", "application/json," + v2JSON, 200, "application/json"},
		{"q-values beat order", "/apis", "application/json;q=0.5," + v2JSON + ";q=0.9", 200, v2JSON},
		{"q-values beat order, reversed", "/apis", v2JSON + ";q=0.4,application/json;q=0.8", 200, "application/json"},
		{"specific range beats wildcard at equal q", "/apis", "*/*," + protobuf, 200, protobuf},
		{"wildcard gets JSON", "/apis", "*/*", 200, "application/json"},
		{"protobuf legacy", "/apis/coordination.k8s.io/v1", protobuf + ",application/json", 200, protobuf},
		{"protobuf aggregated", "/apis", v2Proto + "," + protobuf, 200, v2Proto},
		{"yaml", "/api/v1", "application/yaml", 200, "application/yaml"},
		{"unknown aggregated version falls through", "/apis", "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList,application/json", 200, "application/json"},
		{"aggregated on a group version is not offered", "/apis/coordination.k8s.io/v1", v2JSON, 406, "application/json"},
		{"aggregated on a group version falls back", "/apis/coordination.k8s.io/v1", v2JSON + ",application/json", 200, "application/json"},
		{"Table is not a discovery form", "/apis", "application/json;as=Table;v=v1;g=meta.k8s.io", 406, "application/json"},
		{"q=0 refuses JSON despite wildcard", "/apis", "application/json;q=0,*/*;q=0.1", 200, "application/yaml"},
		{"unsupported media type", "/api", "text/html", 406, "application/json"},
		{"watch stream is refused", "/apis", "application/json;stream=watch", 406, "application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			if tc.accept != "" {
				h.Set("Accept", tc.accept)
			}
			w := get(t, d, tc.path, h)
			if w.Code != tc.code || w.Header().Get("Content-Type") != tc.contentType {
				t.Errorf("GET %s Accept %q = %d %q, want %d %q\n%s", tc.path, tc.accept, w.Code, w.Header().Get("Content-Type"), tc.code, tc.contentType, w.Body)
			}
		})
	}
}
