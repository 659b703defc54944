package apiserver

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/leasehold/leasehold/internal/registry"
)

// readBody reads a request body of at most MaxRequestBodyBytes.
func readBody(r *http.Request) ([]byte, error) {
	return readBodyInto(r, nil)
}

// readBodyInto is readBody reading into buf's memory when the body fits
// (see byteBuffers).
func readBodyInto(r *http.Request, buf []byte) ([]byte, error) {
	if r.ContentLength > MaxRequestBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", MaxRequestBodyBytes))
	}
	var (
		body []byte
		err  error
	)
	if r.ContentLength > 0 {
		body, err = readAnnounced(r.Body, int(r.ContentLength), buf)
	} else {
		body, err = io.ReadAll(io.LimitReader(r.Body, MaxRequestBodyBytes+1))
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading request body: %v", err))
	}
	if len(body) > MaxRequestBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", MaxRequestBodyBytes))
	}
	return body, nil
}

// readAnnounced reads a body that announced its size n into one buffer of
// exactly n bytes (a renewal's body is a few hundred), then reads on to the
// end so that a body longer than announced is still read whole (and
// judged against the limit by the caller).
func readAnnounced(body io.Reader, n int, buf []byte) ([]byte, error) {
	if cap(buf) >= n {
		buf = buf[:n]
	} else {
		buf = make([]byte, n)
	}
	if _, err := io.ReadFull(body, buf); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("body shorter than its Content-Length of %d bytes: %w", n, err)
		}
		return nil, err
	}
	var probe [1]byte
	m, err := io.ReadFull(body, probe[:])
	switch {
	case errors.Is(err, io.EOF):
		return buf, nil
	case err != nil:
		return nil, err
	}
	rest, err := io.ReadAll(io.LimitReader(body, MaxRequestBodyBytes+1-int64(n)-int64(m)))
	return append(append(buf, probe[:m]...), rest...), err
}

// fieldValidation is the fieldValidation query parameter.
type fieldValidation string

const (
	validationIgnore fieldValidation = "Ignore"
	validationWarn   fieldValidation = "Warn"
	validationStrict fieldValidation = "Strict"
)

func parseFieldValidation(q url.Values) (fieldValidation, error) {
	switch v := fieldValidation(q.Get("fieldValidation")); v {
	case "":
		return validationWarn, nil
	case validationIgnore, validationWarn, validationStrict:
		return v, nil
	default:
		return "", apierrors.NewBadRequest(fmt.Sprintf("fieldValidation parameter unsupported: %s, valid values are: %s, %s, %s", v, validationIgnore, validationWarn, validationStrict))
	}
}

// requestSerializer finds the codec for a request Content-Type.
func (s *Server) requestSerializer(contentType string) (runtime.SerializerInfo, error) {
	if contentType == "" {
		contentType = runtime.ContentTypeJSON
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return runtime.SerializerInfo{}, s.unsupportedMediaType(contentType)
	}
	info, ok := s.serializerFor(mt)
	if !ok || strings.Contains(mt, "*") {
		return runtime.SerializerInfo{}, s.unsupportedMediaType(contentType)
	}
	return info, nil
}

// decodeObject decodes a body into a new object of res, enforcing the kind
// and apiVersion and applying fieldValidation. It returns warnings for Warn.
func (s *Server) decodeObject(res *registry.Resource, info runtime.SerializerInfo, body []byte, fv fieldValidation) (runtime.Object, []string, error) {
	if len(body) == 0 {
		return nil, nil, apierrors.NewBadRequest("the body of the request was empty")
	}
	dec := info.Serializer
	if fv != validationIgnore && info.StrictSerializer != nil {
		dec = info.StrictSerializer
	}
	obj := res.New()
	gvk := res.GroupVersionKind()
	if info.MediaType == runtime.ContentTypeProtobuf {
		if done, err := unmarshalEnveloped(body, gvk, obj); done {
			if err != nil {
				return nil, nil, apierrors.NewBadRequest(decodeErrorMessage(err))
			}
			obj.GetObjectKind().SetGroupVersionKind(gvk)
			return obj, nil, nil
		}
	}
	out, gotGVK, err := dec.Decode(body, &gvk, obj)
	var warnings []string
	if err != nil {
		if !runtime.IsStrictDecodingError(err) {
			return nil, nil, apierrors.NewBadRequest(decodeErrorMessage(err))
		}
		if sde, ok := runtime.AsStrictDecodingError(err); ok {
			if fv == validationStrict {
				return nil, nil, apierrors.NewBadRequest(sde.Error())
			}
			for _, e := range sde.Errors() {
				warnings = append(warnings, e.Error())
			}
		}
	}
	if out != obj {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %T", res.Kind, out))
	}
	if gotGVK != nil && (*gotGVK != gvk) {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", gotGVK.GroupVersion(), gvk.GroupVersion()))
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, warnings, nil
}

func decodeErrorMessage(err error) string {
	return fmt.Sprintf("the object provided is unrecognized or malformed: %v", err)
}

// kindFor returns the qualified kind used in Invalid errors.
func kindFor(res *registry.Resource) schema.GroupKind {
	return schema.GroupKind{Group: res.GroupVersion.Group, Kind: res.Kind}
}

// writeWarnings adds Kubernetes-style Warning headers.
func writeWarnings(w http.ResponseWriter, warnings []string) {
	for _, msg := range warnings {
		w.Header().Add("Warning", fmt.Sprintf("299 - %q", msg))
	}
}
