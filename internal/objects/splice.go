package objects

import (
	"bytes"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/leasehold/leasehold/internal/envelope"
)

// WithResourceVersion appends to dst the protobuf envelope stored (an
// object's storage encoding, which the serializer wrote with an empty
// metadata.resourceVersion) with its resourceVersion set to rv: exactly the
// bytes the same serializer writes for the object once the revision is
// known, since the generated marshalling writes every field in number order
// and an empty string as its tag and a zero length. So a write answered in
// protobuf (a kubelet's renewal) needs no second encoding of the object it
// has just stored; the encoding of the answer was about 2% of a renewing
// server's CPU (bench max --client lean, 64 clients), the splice copies
// about 600 bytes. It reports false, leaving dst as it was, for anything
// but one envelope whose object has one metadata field with one empty
// resourceVersion (TestWithResourceVersionMatchesSerializer).
func WithResourceVersion(dst, stored []byte, rv string) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(stored, envelope.Magic)
	if !ok {
		return dst, false
	}
	raw, ok := onlyField(rest, 2) // runtime.Unknown's raw: the object
	if !ok {
		return dst, false
	}
	meta, ok := onlyField(rest[raw.start:raw.end], 1) // its ObjectMeta
	if !ok {
		return dst, false
	}
	metaBytes := rest[raw.start+meta.start : raw.start+meta.end]
	version, ok := onlyField(metaBytes, 6) // ObjectMeta's resourceVersion
	if !ok || version.start != version.end {
		return dst, false
	}
	// The resourceVersion grows from a zero length to rv with its length;
	// the metadata's and the object's length prefixes may grow with it.
	grow := len(rv) + protowire.SizeVarint(uint64(len(rv))) - 1
	metaLen := meta.end - meta.start
	rawLen := raw.end - raw.start
	newMetaLen := metaLen + grow
	newRawLen := rawLen + grow + protowire.SizeVarint(uint64(newMetaLen)) - protowire.SizeVarint(uint64(metaLen))

	rawBytes := rest[raw.start:raw.end]
	dst = append(dst, envelope.Magic...)
	dst = append(dst, rest[:raw.tagEnd]...)
	dst = protowire.AppendVarint(dst, uint64(newRawLen))
	dst = append(dst, rawBytes[:meta.tagEnd]...)
	dst = protowire.AppendVarint(dst, uint64(newMetaLen))
	dst = append(dst, metaBytes[:version.tagEnd]...)
	dst = protowire.AppendVarint(dst, uint64(len(rv)))
	dst = append(dst, rv...)
	dst = append(dst, metaBytes[version.end:]...)
	dst = append(dst, rawBytes[meta.end:]...)
	dst = append(dst, rest[raw.end:]...)
	return dst, true
}

// fieldSpan locates a length-delimited field in its message: its tag ends
// at tagEnd (where its length prefix starts), its value is [start, end).
type fieldSpan struct{ tagEnd, start, end int }

// onlyField finds length-delimited field num in message b, which must hold
// it exactly once and be well formed throughout.
func onlyField(b []byte, num protowire.Number) (fieldSpan, bool) {
	var span fieldSpan
	found := false
	for off := 0; off < len(b); {
		n, typ, tn := protowire.ConsumeTag(b[off:])
		if tn < 0 {
			return fieldSpan{}, false
		}
		if n != num {
			fn := protowire.ConsumeFieldValue(n, typ, b[off+tn:])
			if fn < 0 {
				return fieldSpan{}, false
			}
			off += tn + fn
			continue
		}
		if typ != protowire.BytesType || found {
			return fieldSpan{}, false
		}
		v, vn := protowire.ConsumeBytes(b[off+tn:])
		if vn < 0 {
			return fieldSpan{}, false
		}
		end := off + tn + vn
		span, found = fieldSpan{tagEnd: off + tn, start: end - len(v), end: end}, true
		off = end
	}
	return span, found
}
