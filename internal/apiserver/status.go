package apiserver

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// writeError answers with the Status form of err: an APIStatus error keeps its
// code and reason, anything else is a 500 InternalError.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	st := statusFor(err)
	if st.Code >= 500 {
		s.logger.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	st.Kind, st.APIVersion = "Status", "v1"
	n, ok := s.negotiate(r.Header.Get("Accept"), false)
	if !ok || n.target != targetObject {
		n, _ = s.negotiate("application/json", false)
	}
	s.writeObject(w, int(st.Code), n, &st)
}

// statusFor converts an error into a Status the way apiserver's
// ErrorToAPIStatus does.
func statusFor(err error) metav1.Status {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		st := se.Status()
		if st.Code == 0 {
			st.Code = http.StatusInternalServerError
		}
		st.Status = metav1.StatusFailure
		return st
	}
	return apierrors.NewInternalError(err).Status()
}

// badRequest is a 400 with Kubernetes' BadRequest reason.
func badRequest(format string, args ...interface{}) error {
	return apierrors.NewBadRequest(fmt.Sprintf(format, args...))
}

// statusError builds a StatusError for reasons apimachinery has no
// constructor for (they live in k8s.io/apiserver's negotiation package).
func statusError(code int32, reason metav1.StatusReason, msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg,
	}}
}

func (s *Server) mediaTypes() string {
	var types []string
	for _, i := range s.codecs.SupportedMediaTypes() {
		types = append(types, i.MediaType)
	}
	return strings.Join(types, ", ")
}

// unsupportedMediaType is the 415 for a body in a format we do not decode.
func (s *Server) unsupportedMediaType(contentType string) error {
	return statusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
		fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s", s.mediaTypes()))
}
