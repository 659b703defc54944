package apiserver

import (
	"net/http"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/objects"
	"github.com/leasehold/leasehold/internal/registry"
)

// parseListOptions reads the query parameters of a list, watch or
// deletecollection: the ListOptions, their selectors, and the rules on
// what they may combine (objects.CheckListOptions), answered in that order.
func parseListOptions(res *registry.Resource, q url.Values, watch bool) (objects.ListOptions, error) {
	var o objects.ListOptions
	if err := metav1.Convert_url_Values_To_v1_ListOptions(&q, &o.ListOptions, nil); err != nil {
		return o, apierrors.NewBadRequest(err.Error())
	}
	sel, err := objects.ParseSelector(res, q.Get("labelSelector"), q.Get("fieldSelector"))
	if err != nil {
		return o, err
	}
	o.Selector = sel
	return o, objects.CheckListOptions(&o.ListOptions, watch)
}

// readList is the opening list and deletecollection share: the answer's
// form (a list, or 406), then the list options.
func (s *Server) readList(r *http.Request, res *registry.Resource) (negotiated, objects.ListOptions, error) {
	n, err := s.accept(r, true)
	if err != nil {
		return n, objects.ListOptions{}, err
	}
	o, err := parseListOptions(res, r.URL.Query(), false)
	return n, o, err
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	n, o, err := s.readList(r, res)
	if err != nil {
		return err
	}
	if n, err = withTableOptions(n, r.URL.Query()); err != nil {
		return err
	}
	list, release, err := s.objects.List(r.Context(), res, info.namespace, o)
	if err != nil {
		return err
	}
	// The page's objects count against the cache's list budget until the
	// response is written.
	defer release()
	return s.respondList(w, res, n, list)
}
