package apiserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"

	"k8s.io/client-go/rest"

	"github.com/leasehold/leasehold/internal/request"
)

// LoopbackConfig returns a client-go config whose requests are served in
// process, through the same pipeline external clients use but without TLS
// or sockets. They are authenticated as user (plus system:authenticated),
// which only code in this process can choose, and then authorized and
// admitted like everyone else's: each controller acts under its own
// identity. In-process controllers write through it; they read from the
// watch cache directly, so the transport does not need to stream.
func (s *Server) LoopbackConfig(user request.User) *rest.Config {
	if !slices.Contains(user.Groups, request.AllAuthenticated) {
		user.Groups = append(slices.Clip(user.Groups), request.AllAuthenticated)
	}
	return &rest.Config{
		Host:      "http://leasehold.loopback",
		Transport: loopback{s: s, user: user},
		QPS:       -1,
		// The field manager is the part before the slash (leasehold-loopback);
		// the rest names the identity in the audit trail's userAgent, as
		// kube-controller-manager's clients end theirs with the controller.
		UserAgent: "leasehold-loopback/" + user.Name,
	}
}

// ServerLoopbackConfig is LoopbackConfig for the server's own identity,
// system:apiserver in system:masters, as kube-apiserver's loopback client.
func (s *Server) ServerLoopbackConfig() *rest.Config {
	return s.LoopbackConfig(ServerUser())
}

// ServerUser is the server's own identity: system:apiserver in
// system:masters.
func ServerUser() request.User {
	return request.User{Name: request.APIServerUser, Groups: []string{request.SystemPrivilegedGroup, request.AllAuthenticated}}
}

type loopback struct {
	s    *Server
	user request.User
}

// RoundTrip implements http.RoundTripper.
func (l loopback) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.WithContext(context.WithValue(req.Context(), loopbackKey{}, &l.user))
	// In-process requests come from this host, as kube-apiserver's loopback
	// connections do: the audit trail's sourceIPs says 127.0.0.1.
	req.RemoteAddr = "127.0.0.1:0"
	rec := httptest.NewRecorder()
	l.s.ServeHTTP(rec, req)
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}
