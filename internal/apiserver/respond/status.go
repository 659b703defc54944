package respond

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// StatusFor converts an error into the Status a client gets, as
// kube-apiserver's ErrorToAPIStatus does: an APIStatus error keeps its code
// and reason, anything else is a 500 InternalError.
func StatusFor(err error) *metav1.Status {
	var se apierrors.APIStatus
	var st metav1.Status
	if errors.As(err, &se) {
		st = se.Status()
		if st.Code == 0 {
			st.Code = http.StatusInternalServerError
		}
		st.Status = metav1.StatusFailure
	} else {
		st = apierrors.NewInternalError(err).Status()
	}
	st.Kind, st.APIVersion = "Status", "v1"
	return &st
}

// statusError builds a StatusError for reasons apimachinery has no
// constructor for (they live in k8s.io/apiserver's negotiation package).
func statusError(code int32, reason metav1.StatusReason, msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg,
	}}
}

// NotAcceptable is the 406 for an Accept header nothing can be served for.
func NotAcceptable(mediaTypes []string) error {
	return statusError(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
		"only the following media types are accepted: "+strings.Join(mediaTypes, ", "))
}

// UnsupportedMediaType is the 415 for a body in a format not decoded.
func UnsupportedMediaType(mediaTypes []string) error {
	return statusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
		"the body of the request was in an unknown format - accepted media types include: "+strings.Join(mediaTypes, ", "))
}

// RawJSON writes a non-negotiated JSON body, indented like kube-apiserver's
// responsewriters.WriteRawJSON (discovery's /version and the Status of a
// failed negotiation).
func (wr *Writer) RawJSON(w http.ResponseWriter, code int, v any) {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		wr.logger.Error("encoding response", "type", fmt.Sprintf("%T", v), "err", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", runtime.ContentTypeJSON)
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
