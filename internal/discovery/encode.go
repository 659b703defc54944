package discovery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// writeObject encodes obj with the negotiated serializer and writes it with
// status 200. encodeAs is the version written into apiVersion; nil writes
// the kind alone (kube-apiserver's "stripped version" documents). The body is
// encoded before anything is written so an encoding failure can still become
// a 500.
func (d *Discovery) writeObject(w http.ResponseWriter, n negotiated, obj runtime.Object, encodeAs runtime.GroupVersioner) {
	s := n.info.Serializer
	if n.pretty && n.info.PrettySerializer != nil {
		s = n.info.PrettySerializer
	}
	var buf bytes.Buffer
	if err := d.encode(&buf, s, obj, encodeAs); err != nil {
		d.logger.Error("encoding discovery document", "type", fmt.Sprintf("%T", obj), "mediaType", n.info.MediaType, "err", err)
		d.writeStatus(w, apierrors.NewInternalError(err).Status())
		return
	}
	w.Header().Set("Content-Type", contentType(n))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

func (d *Discovery) encode(buf *bytes.Buffer, s runtime.Serializer, obj runtime.Object, encodeAs runtime.GroupVersioner) error {
	if encodeAs != nil {
		if err := d.codecs.EncoderForVersion(s, encodeAs).Encode(obj, buf); err != nil {
			return fmt.Errorf("encoding %T: %w", obj, err)
		}
		return nil
	}
	kinds, _, err := d.scheme.ObjectKinds(obj)
	if err != nil {
		return fmt.Errorf("looking up kind of %T: %w", obj, err)
	}
	// obj is built for this request alone, so setting its kind is safe; the
	// raw serializer writes TypeMeta as found.
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{Kind: kinds[0].Kind})
	if err := s.Encode(obj, buf); err != nil {
		return fmt.Errorf("encoding %T: %w", obj, err)
	}
	return nil
}

// contentType is the negotiated media type; a transformed response names its
// group, version and kind so that clients (client-go's ContentTypeIsGVK) can
// tell an aggregated document from a legacy one.
func contentType(n negotiated) string {
	ct := n.info.MediaType
	if n.target != nil {
		ct += ";g=" + n.target.Group + ";v=" + n.target.Version + ";as=" + n.target.Kind
	}
	return ct
}

// writeStatus writes a failure Status in JSON, as kube-apiserver does when
// negotiation itself failed or the path is unknown.
func (d *Discovery) writeStatus(w http.ResponseWriter, status metav1.Status) {
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	d.writeRawJSON(w, int(status.Code), status)
}

// writeRawJSON writes a non-negotiated JSON body, indented like
// kube-apiserver's responsewriters.WriteRawJSON.
func (d *Discovery) writeRawJSON(w http.ResponseWriter, code int, v any) {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		d.logger.Error("encoding discovery response", "type", fmt.Sprintf("%T", v), "err", err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", runtime.ContentTypeJSON)
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// statusNotFound is kube-apiserver's answer for a path it does not serve.
func statusNotFound() metav1.Status {
	return apierrors.NewGenericServerResponse(http.StatusNotFound, "", schema.GroupResource{}, "", "", 0, false).Status()
}

func statusMethodNotAllowed(method string) metav1.Status {
	return apierrors.NewMethodNotSupported(schema.GroupResource{}, strings.ToLower(method)).Status()
}

// statusNotAcceptable is the 406 kube-apiserver returns when no Accept clause
// names a media type it can produce.
func statusNotAcceptable(supported []string) metav1.Status {
	return metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotAcceptable,
		Reason:  metav1.StatusReasonNotAcceptable,
		Message: "only the following media types are accepted: " + strings.Join(supported, ", "),
	}
}
