package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/storage"
)

// writeRequest is a create or update request, negotiated and decoded.
type writeRequest struct {
	n        negotiated
	opts     writeOptions
	obj      runtime.Object
	warnings []string
}

// readWriteRequest negotiates the response, parses the write options and
// decodes the body of a POST or PUT.
func (s *Server) readWriteRequest(r *http.Request, res *registry.Resource) (writeRequest, error) {
	var wr writeRequest
	var ok bool
	if wr.n, ok = s.negotiate(r.Header.Get("Accept"), false); !ok {
		return wr, notAcceptable(s)
	}
	var err error
	if wr.opts, err = parseWriteOptions(r); err != nil {
		return wr, err
	}
	si, err := s.requestSerializer(r.Header.Get("Content-Type"))
	if err != nil {
		return wr, err
	}
	buf := s.bodies.get()
	body, err := readBodyInto(r, *buf)
	if err != nil {
		return wr, err
	}
	wr.obj, wr.warnings, err = s.decodeObject(res, si, body, wr.opts.fieldValidation)
	s.bodies.put(buf, body)
	return wr, err
}

// respond answers a successful request with obj in the negotiated form: 201
// when it created the object, 200 otherwise, with any Warning headers.
func (s *Server) respond(w http.ResponseWriter, res *registry.Resource, n negotiated, obj runtime.Object, created bool, warnings []string) error {
	out, err := s.transform(res, n, obj, false, false)
	if err != nil {
		return err
	}
	writeWarnings(w, warnings)
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	s.writeObject(w, code, n, out)
	return nil
}

// respondList answers a list request with list in the negotiated form.
func (s *Server) respondList(w http.ResponseWriter, res *registry.Resource, n negotiated, list runtime.Object) error {
	out, err := s.transform(res, n, list, true, false)
	if err != nil {
		return err
	}
	s.writeObject(w, http.StatusOK, n, out)
	return nil
}

// storeError turns a storage error from reading or writing key into the
// Status a client gets.
func storeError(res *registry.Resource, name, key string, err error) error {
	switch {
	case errors.Is(err, storage.ErrConflict):
		return conflict(res, name)
	case errors.Is(err, storage.ErrNotFound):
		return apierrors.NewNotFound(res.GroupResource(), name)
	case errors.Is(err, storage.ErrKeyExists):
		return apierrors.NewAlreadyExists(res.GroupResource(), name)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// The client gave up (or its timeout passed) before storage
		// answered: kube-apiserver's answer is a 504, and it is not a server fault.
		return apierrors.NewTimeoutError(fmt.Sprintf("request did not complete within requested timeout - %v", err), 0)
	}
	return fmt.Errorf("storage %s: %w", key, err)
}
