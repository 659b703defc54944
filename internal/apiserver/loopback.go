package apiserver

import (
	"context"
	"net/http"
	"net/http/httptest"

	"k8s.io/client-go/rest"
)

// LoopbackConfig returns a client-go config whose requests are served in
// process, through the same request path external clients use but without
// TLS or sockets; they are trusted as the server itself. In-process controllers write through it; they read
// from the watch cache directly, so the transport does not need to stream.
func (s *Server) LoopbackConfig() *rest.Config {
	return &rest.Config{
		Host:      "http://leasehold.loopback",
		Transport: loopback{s: s},
		QPS:       -1,
		UserAgent: "leasehold-loopback",
	}
}

type loopback struct {
	s *Server
}

// loopbackKey marks a request that came through the loopback transport;
// only code in this process can set it.
type loopbackKey struct{}

// RoundTrip implements http.RoundTripper.
func (l loopback) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := context.WithValue(req.Context(), loopbackKey{}, true)
	req = req.WithContext(ctx)
	rec := httptest.NewRecorder()
	l.s.ServeHTTP(rec, req)
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}

func isLoopback(r *http.Request) bool {
	v, _ := r.Context().Value(loopbackKey{}).(bool)
	return v
}
