package apiserver

import (
	"net/http"

	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/request"
)

// review answers a create of a review resource (registry.Resource.Review):
// the body is decoded as any create's, the resource's Review judges it with
// the request's record (who asks), and its answer goes back with 201
// Created in the negotiated encoding. Nothing is stored or admitted.
func (s *Server) review(w http.ResponseWriter, r *http.Request, rec *request.Record, res *registry.Resource) error {
	wr, err := s.readWriteRequest(r, res, nil)
	if err != nil {
		return err
	}
	out, err := res.Review(r.Context(), rec, wr.obj)
	if err != nil {
		return err
	}
	return s.respond(w, res, wr.n, out, true, wr.warnings)
}
