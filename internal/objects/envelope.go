package objects

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/leasehold/leasehold/internal/envelope"
)

// UnmarshalEnveloped decodes data, an object in Kubernetes' protobuf
// envelope (package envelope), into obj (fresh from its resource's New)
// when the envelope names exactly gvk. It reports false, having left obj alone, for anything
// else (another or a partial kind, a content encoding, a malformed
// envelope): the caller then decodes with the protobuf serializer, whose
// defaults and error messages those cases keep.
//
// Why not the serializer always: it first copies the object's whole message
// out of the envelope (runtime.Unknown's raw bytes) and then decodes the
// copy. Every renewal decodes twice (the request body, then the stored value
// in the watch cache), and those copies were 7% of a 100,000-node server's
// allocations. The generated Unmarshal copies every string and byte slice
// out of its input, so decoding straight from data shares nothing with it.
func UnmarshalEnveloped(data []byte, gvk schema.GroupVersionKind, obj runtime.Object) (bool, error) {
	u, ok := obj.(interface{ Unmarshal([]byte) error })
	if !ok {
		return false, nil
	}
	raw, ok := envelope.Raw(data, gvk)
	if !ok {
		return false, nil
	}
	return true, u.Unmarshal(raw)
}
