package garbagecollector

import (
	"hash/maphash"

	"k8s.io/apimachinery/pkg/types"

	"github.com/leasehold/leasehold/internal/slots"
	"github.com/leasehold/leasehold/internal/uidbytes"
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
	if b, ok := uidbytes.Parse(uid); ok {
		return x.uuids.Get(b)
	}
	id, found := x.other[uid]
	return id, found
}

// len is the number of uids held.
func (x *uidIndex) len() int { return x.uuids.Len() + len(x.other) }
