package apiserver

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/leasehold/leasehold/internal/objects"
	"github.com/leasehold/leasehold/internal/registry"
)

func (s *Server) update(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	wr, err := s.readWriteRequest(r, res, &info)
	if err != nil {
		return err
	}
	acc, err := meta.Accessor(wr.obj)
	if err != nil {
		return err
	}
	if err := objects.CheckNamespace(res, acc, info.namespace); err != nil {
		return err
	}
	if acc.GetName() != info.name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", acc.GetName(), info.name))
	}
	out, stored, created, err := s.objects.Update(r.Context(), res, info.namespace, info.name, info.subresource, wr.obj, wr.opts.WriteOptions)
	if err != nil {
		return err
	}
	return s.respondWritten(w, res, wr.n, out, stored, created, wr.warnings)
}
