package discovery

import (
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/leasehold/leasehold/internal/apiserver/respond"
)

// writeObject encodes obj with the negotiated serializer and writes it with
// status 200. encodeAs is the version written into apiVersion; nil writes
// the kind alone (kube-apiserver's "stripped version" documents). An
// encoding failure becomes a 500.
func (d *Discovery) writeObject(w http.ResponseWriter, n negotiated, obj runtime.Object, encodeAs runtime.GroupVersioner) {
	s := n.info.Serializer
	if n.pretty && n.info.PrettySerializer != nil {
		s = n.info.PrettySerializer
	}
	enc, err := d.encoder(s, obj, encodeAs)
	if err == nil {
		err = d.out.Encoded(w, http.StatusOK, contentType(n), enc, obj)
	}
	if err != nil {
		d.logger.Error("encoding discovery document", "type", fmt.Sprintf("%T", obj), "mediaType", n.info.MediaType, "err", err)
		d.writeStatus(w, apierrors.NewInternalError(err))
	}
}

// encoder is what writes obj: the serializer converting to encodeAs, or,
// without a version, the raw serializer once obj carries its bare kind.
func (d *Discovery) encoder(s runtime.Serializer, obj runtime.Object, encodeAs runtime.GroupVersioner) (runtime.Encoder, error) {
	if encodeAs != nil {
		return d.codecs.EncoderForVersion(s, encodeAs), nil
	}
	kinds, _, err := d.scheme.ObjectKinds(obj)
	if err != nil {
		return nil, fmt.Errorf("looking up kind of %T: %w", obj, err)
	}
	// obj is built for this request alone, so setting its kind is safe; the
	// raw serializer writes TypeMeta as found.
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{Kind: kinds[0].Kind})
	return s, nil
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

// writeStatus writes a failure Status as indented JSON, as kube-apiserver
// does when negotiation itself failed or the path is unknown.
func (d *Discovery) writeStatus(w http.ResponseWriter, err error) {
	st := respond.StatusFor(err)
	d.out.RawJSON(w, int(st.Code), st)
}

// statusNotFound is kube-apiserver's answer for a path it does not serve.
func statusNotFound() error {
	return apierrors.NewGenericServerResponse(http.StatusNotFound, "", schema.GroupResource{}, "", "", 0, false)
}

func statusMethodNotAllowed(method string) error {
	return apierrors.NewMethodNotSupported(schema.GroupResource{}, strings.ToLower(method))
}
