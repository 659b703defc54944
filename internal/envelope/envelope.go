// Package envelope reads Kubernetes' protobuf envelope: the four bytes
// "k8s\x00", then a runtime.Unknown whose TypeMeta names the object and
// whose raw field holds the object's own message. It is the envelope the
// protobuf serializer writes for stored objects, request and answer bodies
// and watch events, read here without copying: the API server decodes a
// renewal's lease straight out of it (objects.UnmarshalEnveloped), and the
// dashboard reads the few fields it shows of each watched lease from it.
// It depends on nothing but the protobuf wire format.
package envelope

import (
	"bytes"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Magic starts every envelope.
var Magic = []byte("k8s\x00")

// Raw returns the object's own message in envelope data (runtime.Unknown's
// raw bytes) if data is an envelope whose TypeMeta is exactly gvk and which
// carries no content encoding; false for anything else, malformed input
// included. The message is a slice of data.
func Raw(data []byte, gvk schema.GroupVersionKind) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(data, Magic)
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
