package objects

import (
	jsoniter "github.com/json-iterator/go"
)

// appendMemberValue appends to dst the raw value of the member called
// prefix+name in the JSON object raw, if raw is an object that has one (the
// first such member, as a decoder reads it). ownsAll calls it on every
// renewal of a lease whose FieldsV1 the parsed-set cache does not hold,
// which in a fleet is every node lease (each names its Node's uid).
//
// scanMember reads raw in place; a document it cannot read alone (a
// top-level key written with escapes, a value that is not plain JSON) goes
// to the iterator structured-merge-diff parses FieldsV1 with. The iterator
// allocated a string per key at every depth (the uid-keyed owner
// reference's key took its slow path), and the whole lookup was 1.8% of a
// 100,000-node server's CPU profile. BenchmarkOwnsAll, 3 alternating runs
// on one pinned core: 1,386-1,476 -> 555-639 ns, 7 -> 0 allocations.
func appendMemberValue(dst, raw []byte, prefix, name string) ([]byte, bool) {
	if v, found, decided := scanMember(raw, prefix, name); decided {
		if !found {
			return dst, false
		}
		return append(dst, v...), true
	}
	return appendMemberValueIter(dst, raw, prefix+name)
}

// appendMemberValueIter is appendMemberValue with the iterator, borrowed
// from its pool: the standard library's Decoder cost as much as the parse
// it saves.
func appendMemberValueIter(dst, raw []byte, name string) ([]byte, bool) {
	if dst == nil {
		dst = []byte{} // the iterator takes a nil buffer for no capture
	}
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

// scanMember finds the member prefix+name of the JSON object raw without
// allocating. decided is false when raw is not a document it reads alone:
// a top-level key with an escape (it would have to decode it to compare),
// or anything but one well-formed object, so that the caller asks the
// iterator, whose verdict stands. When decided, found says whether the
// member is there and value is its raw bytes.
func scanMember(raw []byte, prefix, name string) (value []byte, found, decided bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false, false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return nil, false, skipSpace(raw, i+1) == len(raw)
	}
	for i < len(raw) {
		if raw[i] != '"' {
			return nil, false, false
		}
		end := i + 1
		for end < len(raw) && raw[end] != '"' {
			if raw[end] == '\\' || raw[end] < 0x20 {
				return nil, false, false
			}
			end++
		}
		if end >= len(raw) {
			return nil, false, false
		}
		key := raw[i+1 : end]
		i = skipSpace(raw, end+1)
		if i >= len(raw) || raw[i] != ':' {
			return nil, false, false
		}
		// The value's bytes start right after the colon, whitespace
		// included, as the iterator captures them.
		start := i + 1
		stop, ok := skipValue(raw, skipSpace(raw, start), 1)
		if !ok {
			return nil, false, false
		}
		if !found && len(key) == len(prefix)+len(name) &&
			string(key[:len(prefix)]) == prefix && string(key[len(prefix):]) == name {
			value, found = raw[start:stop], true
		}
		var closed bool
		if i, closed, ok = afterItem(raw, stop, '}'); !ok {
			return nil, false, false
		}
		if closed {
			if skipSpace(raw, i) != len(raw) {
				return nil, false, false
			}
			return value, found, true
		}
	}
	return nil, false, false
}

// maxScanDepth bounds the nesting scanMember reads itself; FieldsV1 of
// the API's objects nests a few levels per field path element.
const maxScanDepth = 64

// skipValue returns the index just past the JSON value starting at raw[i],
// and false if what starts there is not one it reads: objects, arrays,
// strings and the literals, nested at most maxScanDepth deep. FieldsV1
// holds no numbers, so a number is left to the iterator too.
func skipValue(raw []byte, i, depth int) (int, bool) {
	if i >= len(raw) || depth > maxScanDepth {
		return i, false
	}
	switch raw[i] {
	case '"':
		return skipString(raw, i)
	case '{':
		return skipObject(raw, i, depth+1)
	case '[':
		return skipArray(raw, i, depth+1)
	case 't':
		return skipLiteral(raw, i, "true")
	case 'f':
		return skipLiteral(raw, i, "false")
	case 'n':
		return skipLiteral(raw, i, "null")
	}
	return i, false
}

// skipObject returns the index just past the object starting at raw[i].
func skipObject(raw []byte, i, depth int) (int, bool) {
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(raw) || raw[i] != '"' {
			return i, false
		}
		end, ok := skipString(raw, i)
		if !ok {
			return end, false
		}
		if i = skipSpace(raw, end); i >= len(raw) || raw[i] != ':' {
			return i, false
		}
		if i, ok = skipValue(raw, skipSpace(raw, i+1), depth); !ok {
			return i, false
		}
		var closed bool
		if i, closed, ok = afterItem(raw, i, '}'); !ok || closed {
			return i, ok
		}
	}
}

// skipArray returns the index just past the array starting at raw[i].
func skipArray(raw []byte, i, depth int) (int, bool) {
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = skipValue(raw, i, depth); !ok {
			return i, false
		}
		var closed bool
		if i, closed, ok = afterItem(raw, i, ']'); !ok || closed {
			return i, ok
		}
	}
}

// afterItem reads what follows an object's member or an array's element
// ending at raw[i]: a comma, and the next item starts at next, or the
// closing bracket, and the container ends just before next (closed).
func afterItem(raw []byte, i int, closing byte) (next int, closed, ok bool) {
	if i = skipSpace(raw, i); i >= len(raw) {
		return i, false, false
	}
	switch raw[i] {
	case ',':
		return skipSpace(raw, i+1), false, true
	case closing:
		return i + 1, true, true
	}
	return i, false, false
}

// skipString returns the index just past the string starting at raw[i]:
// escapes must be JSON's, and control characters escaped.
func skipString(raw []byte, i int) (int, bool) {
	for j := i + 1; j < len(raw); j++ {
		switch c := raw[j]; {
		case c == '"':
			return j + 1, true
		case c < 0x20:
			return j, false
		case c == '\\':
			if j+1 >= len(raw) {
				return j, false
			}
			switch raw[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
			case 'u':
				if j+5 >= len(raw) || !isHex(raw[j+2]) || !isHex(raw[j+3]) || !isHex(raw[j+4]) || !isHex(raw[j+5]) {
					return j, false
				}
				j += 5
			default:
				return j, false
			}
		}
	}
	return len(raw), false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// skipLiteral returns the index just past lit at raw[i].
func skipLiteral(raw []byte, i int, lit string) (int, bool) {
	j := i + len(lit)
	if j > len(raw) || string(raw[i:j]) != lit {
		return i, false
	}
	return j, true
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(raw []byte, i int) int {
	for i < len(raw) {
		switch raw[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}
