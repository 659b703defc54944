package apiserver

import (
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/leasehold/leasehold/internal/registry"
)

// parseDeleteOptions reads DeleteOptions from the body (if any) and the query.
func (s *Server) parseDeleteOptions(r *http.Request) (metav1.DeleteOptions, error) {
	var o metav1.DeleteOptions
	body, err := readBody(r)
	if err != nil {
		return o, err
	}
	if len(body) > 0 {
		si, err := s.requestSerializer(r.Header.Get("Content-Type"))
		if err != nil {
			return o, err
		}
		if _, _, err := si.Serializer.Decode(body, nil, &o); err != nil {
			return o, apierrors.NewBadRequest(fmt.Sprintf("decoding DeleteOptions: %v", err))
		}
		logDeleteOptions(r, &o)
	}
	q := r.URL.Query()
	if v := q.Get("propagationPolicy"); v != "" {
		p := metav1.DeletionPropagation(v)
		o.PropagationPolicy = &p
	}
	if v := q.Get("gracePeriodSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return o, apierrors.NewBadRequest(fmt.Sprintf("invalid gracePeriodSeconds %q", v))
		}
		o.GracePeriodSeconds = &n
	}
	o.DryRun = append(o.DryRun, q["dryRun"]...)
	for _, d := range o.DryRun {
		if d != metav1.DryRunAll {
			return o, apierrors.NewBadRequest(fmt.Sprintf("unsupported dryRun value %q: only All is supported", d))
		}
	}
	if p := o.PropagationPolicy; p != nil {
		switch *p {
		case metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan:
		default:
			return o, apierrors.NewInvalid(metav1.SchemeGroupVersion.WithKind("DeleteOptions").GroupKind(), "", field.ErrorList{
				field.NotSupported(field.NewPath("propagationPolicy"), *p, []string{string(metav1.DeletePropagationForeground), string(metav1.DeletePropagationBackground), string(metav1.DeletePropagationOrphan)})})
		}
	}
	return o, nil
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	n, err := s.accept(r, false)
	if err != nil {
		return err
	}
	opts, err := s.parseDeleteOptions(r)
	if err != nil {
		return err
	}
	obj, done, err := s.objects.Delete(r.Context(), res, info.namespace, info.name, opts)
	if err != nil {
		return err
	}
	if !done {
		// Finalizers hold the object: answer with its new state.
		out, err := s.transform(res, n, obj, false, false)
		if err != nil {
			return err
		}
		s.writeObject(w, http.StatusOK, n, out)
		return nil
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	st := &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details:  &metav1.StatusDetails{Name: info.name, Group: res.GroupVersion.Group, Kind: res.Resource, UID: acc.GetUID()},
	}
	if n.target != targetObject {
		n, _ = s.negotiate("application/json", false)
	}
	s.writeObject(w, http.StatusOK, n, st)
	return nil
}
