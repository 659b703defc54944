package apiserver

import (
	"context"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/leasehold/leasehold/internal/request"
)

// authenticate is the pipeline's second stage: it sets rec.User, or answers
// 401 with Kubernetes' Unauthorized Status and returns false.
//
// The loopback transport's requests carry the identity in-process code gave
// them (LoopbackConfig); every other request is judged by
// Config.Authenticator. A presented credential that is not valid (err), and
// a request without one when anonymous requests are off (ok=false), both get
// the 401: kube-apiserver does not tell them apart on the wire.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request, rec *request.Record) bool {
	if u, ok := loopbackUser(r.Context()); ok {
		rec.User = u
		return true
	}
	if s.cfg.Authenticator != nil {
		u, ok, err := s.cfg.Authenticator.AuthenticateRequest(r)
		if ok {
			rec.User = u
			return true
		}
		if err != nil {
			// The reason stays in the server's log: a client learns only
			// that it is not authenticated, as from kube-apiserver.
			s.logger.Debug("authentication failed", "path", r.URL.Path, "err", err)
		}
	}
	s.writeError(w, r, apierrors.NewUnauthorized("Unauthorized"))
	return false
}

// loopbackKey carries the identity of a request that came through the
// loopback transport; only code in this process can set it.
type loopbackKey struct{}

// loopbackUser is the identity the loopback transport gave the request.
func loopbackUser(ctx context.Context) (request.User, bool) {
	u, ok := ctx.Value(loopbackKey{}).(*request.User)
	if !ok {
		return request.User{}, false
	}
	return *u, true
}
