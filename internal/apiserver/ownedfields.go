package apiserver

import (
	jsoniter "github.com/json-iterator/go"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// ownsAll tells whether the FieldsV1 document raw (one manager's entry)
// owns every path in paths.
//
// Each path is looked up in the set parsed from only its top-level field's
// member of raw (`{"f:spec":{...}}`), not from all of raw: membership of a
// path depends only on the subtree under its first element, and the other
// members are what makes documents unique. A kubelet's lease names its
// Node's uid under f:metadata.f:ownerReferences, so whole documents of a
// fleet never repeat and the parsed-set cache would miss (and parse) on
// every renewal; their f:spec members are a handful of shapes.
func (s *Server) ownsAll(raw []byte, paths []fieldpath.Path) bool {
	var (
		top   string
		owned *fieldpath.Set
	)
	// The key is only looked up, never kept: its memory goes back to the
	// pool (it was a third of this function's garbage, a renewal's
	// FieldsV1 being a few hundred bytes).
	buf := s.ownedKeys.get()
	key := *buf
	defer func() { s.ownedKeys.put(buf, key) }()
	for _, p := range paths {
		if len(p) == 0 || p[0].FieldName == nil || !plainJSONName(*p[0].FieldName) {
			return false
		}
		if name := *p[0].FieldName; owned == nil || name != top {
			key = append(key[:0], `{"f:`...)
			key = append(key, name...)
			key = append(key, `":`...)
			var ok bool
			if key, ok = appendMemberValue(key, raw, "f:"+name); !ok {
				return false
			}
			key = append(key, '}')
			if owned, ok = s.fieldSets.getBytes(key); !ok {
				return false
			}
			top = name
		}
		if !owned.Has(p) {
			return false
		}
	}
	return true
}

// appendMemberValue appends to dst the raw value of the member called name
// in the JSON object raw, if raw is an object that has one. It reads with
// the iterator structured-merge-diff parses FieldsV1 with, borrowed from
// its pool: the standard library's Decoder cost as much as the parse it
// saves.
func appendMemberValue(dst, raw []byte, name string) ([]byte, bool) {
	iter := jsoniter.ConfigFastest.BorrowIterator(raw)
	defer jsoniter.ConfigFastest.ReturnIterator(iter)
	found := false
	iter.ReadObjectCB(func(it *jsoniter.Iterator, field string) bool {
		if field == name && !found {
			dst, found = it.SkipAndAppendBytes(dst), true
		} else {
			it.Skip()
		}
		return true
	})
	return dst, iter.Error == nil && found
}

// plainJSONName says whether name is written in JSON as it is, between
// quotes: API field names are, and ownsAll builds its keys from them.
func plainJSONName(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			return false
		}
	}
	return name != ""
}
