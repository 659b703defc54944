package objects

import (
	"bytes"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// protobufMagic starts Kubernetes' protobuf envelope: the four bytes, then a
// runtime.Unknown whose TypeMeta names the object and whose raw field holds
// the object's own message.
var protobufMagic = []byte("k8s\x00")

// UnmarshalEnveloped decodes data, an object in Kubernetes' protobuf
// envelope, into obj (fresh from its resource's New) when the envelope
// names exactly gvk. It reports false, having left obj alone, for anything
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
	raw, ok := envelopeFor(data, gvk)
	if !ok {
		return false, nil
	}
	return true, u.Unmarshal(raw)
}

// envelopeFor returns the raw message of envelope data if its TypeMeta is
// exactly gvk and it carries no content encoding.
func envelopeFor(data []byte, gvk schema.GroupVersionKind) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(data, protobufMagic)
	if !ok {
		return nil, false
	}
	// Fields 1, 2, 3 of runtime.Unknown; its contentType (4) is ignored,
	// as the serializer ignores it.
	var typeMeta, raw, encoding []byte
	if !bytesFields(rest, &typeMeta, &raw, &encoding) || len(encoding) > 0 {
		return nil, false
	}
	var apiVersion, kind []byte // fields 1, 2 of runtime.TypeMeta
	if !bytesFields(typeMeta, &apiVersion, &kind) ||
		string(kind) != gvk.Kind || !isAPIVersion(apiVersion, gvk.GroupVersion()) {
		return nil, false
	}
	return raw, true
}

// bytesFields reads message b, whose fields must all be length-delimited:
// field number i goes to *into[i-1] (the last occurrence wins, as in a
// generated Unmarshal; fields past len(into) are skipped). It reports false
// for anything else, malformed input included.
func bytesFields(b []byte, into ...*[]byte) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType {
			return false
		}
		b = b[n:]
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if num >= 1 && int(num) <= len(into) {
			*into[num-1] = v
		}
	}
	return true
}

// isAPIVersion reports whether b is gv's apiVersion ("group/version", or
// "version" for the core group), without building that string.
func isAPIVersion(b []byte, gv schema.GroupVersion) bool {
	if gv.Group == "" {
		return string(b) == gv.Version
	}
	group, version, ok := bytes.Cut(b, []byte("/"))
	return ok && string(group) == gv.Group && string(version) == gv.Version
}
