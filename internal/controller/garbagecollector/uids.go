package garbagecollector

import (
	"encoding/binary"
	"hash/maphash"

	"k8s.io/apimachinery/pkg/types"

	"github.com/leasehold/leasehold/internal/slots"
)

// uidIndex maps object uids to graph entries. The API server gives every
// object a UUID, and those are found through a slots.Index of entry ids
// that holds no uid at all: an id's uid is its entry's, which the graph
// keeps in step (it removes an entry's uid before changing it, and puts it
// after). That is 5 to 11 bytes per uid and no pointer for the Go collector
// to scan; a map[[16]byte]slotID took 68 B per Node and lease at 20,000
// nodes (heap profile of scripts/heap-per-node.sh), and a map of strings
// more. Any other uid (a client may write one in a reference, and the index
// must answer for it exactly) goes to the string-keyed map.
type uidIndex struct {
	uuids *slots.Index[[16]byte, slotID]
	other map[types.UID]slotID
}

func newUIDIndex(entries *slots.Table[entry, slotID]) uidIndex {
	return uidIndex{
		uuids: slots.NewIndex(maphash.Comparable[[16]byte], func(id slotID) [16]byte { return entries.At(id).uid }),
		other: map[types.UID]slotID{},
	}
}

// put indexes the uid of e, id's entry.
func (x *uidIndex) put(e *entry, id slotID) {
	if e.otherUID {
		x.other[e.extra.uid] = id
		return
	}
	x.uuids.Put(e.uid, id)
}

// remove forgets the uid of e, id's entry, if it is id's.
func (x *uidIndex) remove(e *entry, id slotID) {
	if e.otherUID {
		if uid := e.extra.uid; x.other[uid] == id {
			delete(x.other, uid)
		}
		return
	}
	x.uuids.Remove(e.uid, id)
}

func (x *uidIndex) get(uid types.UID) (slotID, bool) {
	if b, ok := parseUUID(uid); ok {
		return x.uuids.Get(b)
	}
	id, found := x.other[uid]
	return id, found
}

// len is the number of uids held.
func (x *uidIndex) len() int { return x.uuids.Len() + len(x.other) }

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

// isUUID tells whether uid is the canonical form of the UUID b, without
// allocating.
func isUUID(b *[16]byte, uid types.UID) bool {
	if len(uid) != 36 {
		return false
	}
	var buf [36]byte
	putUUID(&buf, b)
	return string(buf[:]) == string(uid)
}

// formatUUID returns the canonical form of the UUID b.
func formatUUID(b *[16]byte) types.UID {
	var buf [36]byte
	putUUID(&buf, b)
	return types.UID(buf[:])
}

func putUUID(buf *[36]byte, b *[16]byte) {
	be := binary.BigEndian
	be.PutUint64(buf[0:8], hex8(be.Uint32(b[0:4])))
	h := hex8(be.Uint32(b[4:8]))
	be.PutUint32(buf[9:13], uint32(h>>32))
	be.PutUint32(buf[14:18], uint32(h))
	h = hex8(be.Uint32(b[8:12]))
	be.PutUint32(buf[19:23], uint32(h>>32))
	be.PutUint32(buf[24:28], uint32(h))
	be.PutUint64(buf[28:36], hex8(be.Uint32(b[12:16])))
	buf[8], buf[13], buf[18], buf[23] = '-', '-', '-', '-'
}

// hex8 returns the 8 lower-case hex digits of x, the first in the highest
// byte: each nibble is spread into a byte of its own, and the bytes are
// turned into digits all at once. isUUID is on a lease renewal's path, and
// took 50-60 ns with a table and a loop, 20-30 ns so (hot caches).
func hex8(x uint32) uint64 {
	v := uint64(x)
	v = (v | v<<16) & 0x0000ffff0000ffff
	v = (v | v<<8) & 0x00ff00ff00ff00ff
	v = (v | v<<4) & 0x0f0f0f0f0f0f0f0f
	letters := (v + 0x0606060606060606) >> 4 & 0x0101010101010101 // 1 in each byte ≥ 10
	return v + 0x3030303030303030 + letters*('a'-'0'-10)
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
