package apiserver

import (
	"net/http"

	"github.com/leasehold/leasehold/internal/registry"
)

// deleteCollection is DELETE on a collection: the selectors of a list and
// the options of a delete, one call of objects.Store.DeleteCollection, and
// the list of what it deleted.
func (s *Server) deleteCollection(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	n, o, err := s.readList(r, res)
	if err != nil {
		return err
	}
	opts, err := s.parseDeleteOptions(r)
	if err != nil {
		return err
	}
	list, err := s.objects.DeleteCollection(r.Context(), res, info.namespace, o.Selector, opts)
	if err != nil {
		return err
	}
	return s.respondList(w, res, n, list)
}
