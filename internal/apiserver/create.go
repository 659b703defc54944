package apiserver

import (
	"net/http"

	"github.com/leasehold/leasehold/internal/registry"
)

func (s *Server) create(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	wr, err := s.readWriteRequest(r, res, nil)
	if err != nil {
		return err
	}
	created, err := s.objects.Create(r.Context(), res, info.namespace, wr.obj, wr.opts.WriteOptions)
	if err != nil {
		return err
	}
	return s.respond(w, res, wr.n, created, true, wr.warnings)
}
