package bench

import (
	"context"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// TestMaxAgainstBaseline runs bench max, both clients and encodings, against
// the baseline handler over HTTP/2 and TLS: the yardstick must carry the
// same workload as a server, every renewal answered with the lease it sent.
func TestMaxAgainstBaseline(t *testing.T) {
	h, err := NewBaselineHandler()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	for _, kind := range []string{ClientTyped, ClientLean} {
		for _, contentType := range []string{ContentTypeProtobuf, ContentTypeJSON} {
			t.Run(kind+"/"+contentType, func(t *testing.T) {
				clients, err := NewClientsOfKind(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}, kind, contentType, 2)
				if err != nil {
					t.Fatal(err)
				}
				defer clients.Close()
				cfg := Config{Namespace: "bench", Duration: 300 * time.Millisecond, Clients: 4, Leases: 8,
					RequestTimeout: 5 * time.Second, Progress: io.Discard, Logger: slog.New(slog.DiscardHandler)}
				res, err := RunMax(context.Background(), cfg, clients.Factory())
				if err != nil {
					t.Fatal(err)
				}
				if res.Ops == 0 || res.ErrorsTotal != 0 {
					t.Fatalf("%d renewals, errors %v", res.Ops, res.Errors)
				}
			})
		}
	}
}

// TestBaselineHandlerAnswers checks the answers bench relies on: a write
// echoed with its status and content type, an empty list, a 404 otherwise.
func TestBaselineHandlerAnswers(t *testing.T) {
	h, err := NewBaselineHandler()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, tc := range []struct {
		method, path, body string
		code               int
		answer             string
	}{
		{http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/ns/leases/a", `{"kind":"Lease"}`, http.StatusOK, `{"kind":"Lease"}`},
		{http.MethodPost, "/api/v1/namespaces", `{"kind":"Namespace"}`, http.StatusCreated, `{"kind":"Namespace"}`},
		{http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/ns/leases", "", http.StatusOK, `{"kind":"LeaseList","apiVersion":"coordination.k8s.io/v1","metadata":{},"items":[]}` + "\n"},
		{http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/ns/leases/a", "", http.StatusNotFound, "404 page not found\n"},
	} {
		req, err := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != tc.code || string(got) != tc.answer {
			t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.path, resp.StatusCode, got, tc.code, tc.answer)
		}
	}
}
