package apiserver

import (
	"net/http"

	"github.com/leasehold/leasehold/internal/objects"
	"github.com/leasehold/leasehold/internal/registry"
)

func (s *Server) get(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	n, err := s.accept(r, false)
	if err != nil {
		return err
	}
	rv, err := objects.ReadResourceVersion(r.URL.Query().Get("resourceVersion"))
	if err != nil {
		return err
	}
	if n, err = withTableOptions(n, r.URL.Query()); err != nil {
		return err
	}
	obj, err := s.objects.Get(r.Context(), res, info.namespace, info.name, rv)
	if err != nil {
		return err
	}
	out, err := s.transform(res, n, obj, false, false)
	if err != nil {
		return err
	}
	s.writeObject(w, http.StatusOK, n, out)
	return nil
}
