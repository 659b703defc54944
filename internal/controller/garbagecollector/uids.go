package garbagecollector

import "k8s.io/apimachinery/pkg/types"

// uidIndex maps object uids to graph entries. The API server gives every
// object a UUID, which is held as its 16 bytes: that map has no pointers,
// so the Go collector does not scan it, and an entry is 20 bytes where a
// string key and value were 32 plus the strings. Any other uid (a client
// may write one in a reference, and the index must answer for it exactly)
// goes to the string-keyed map.
type uidIndex struct {
	uuids map[[16]byte]slotID
	other map[types.UID]slotID
}

func newUIDIndex() uidIndex {
	return uidIndex{uuids: map[[16]byte]slotID{}, other: map[types.UID]slotID{}}
}

func (x *uidIndex) put(uid types.UID, id slotID) {
	if b, ok := parseUUID(uid); ok {
		x.uuids[b] = id
		return
	}
	x.other[uid] = id
}

// remove forgets uid if it is id's.
func (x *uidIndex) remove(uid types.UID, id slotID) {
	if b, ok := parseUUID(uid); ok {
		if x.uuids[b] == id {
			delete(x.uuids, b)
		}
		return
	}
	if x.other[uid] == id {
		delete(x.other, uid)
	}
}

func (x *uidIndex) get(uid types.UID) (slotID, bool) {
	if b, ok := parseUUID(uid); ok {
		id, found := x.uuids[b]
		return id, found
	}
	id, found := x.other[uid]
	return id, found
}

// parseUUID reads uid as a UUID in its canonical form (8-4-4-4-12 lower-case
// hex digits): only that form, so that two uids with the same bytes are the
// same string.
func parseUUID(uid types.UID) (b [16]byte, ok bool) {
	if len(uid) != 36 {
		return b, false
	}
	j := 0
	for i := 0; i < 36; {
		switch i {
		case 8, 13, 18, 23:
			if uid[i] != '-' {
				return b, false
			}
			i++
			continue
		}
		hi, ok1 := hexDigit(uid[i])
		lo, ok2 := hexDigit(uid[i+1])
		if !ok1 || !ok2 {
			return b, false
		}
		b[j] = hi<<4 | lo
		j++
		i += 2
	}
	return b, true
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
