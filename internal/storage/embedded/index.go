package embedded

// keyIndex is the committer's map of every live key to its revisions.
//
// Why not a map[string]indexEntry: assigning to a Go map with string keys
// stores the assigned key string over the one already there, so every update
// left the index holding the updating request's key and let go of the one it
// was created with, which the watch cache goes on holding. At 100,000 renewing
// nodes that was 100,000 extra 48-byte strings in the live heap, about 4% of
// its objects, for the collector to mark on every cycle (inuse_objects
// profile of an idle 100,000-node server, 2026-11-29; with keyIndex the
// objects from registry.Resource.Key went from 294,924 to 152,923 and the
// live heap from 252 to 246 MB). Here the map is
// assigned only when a key is created, so the index shares its key with the
// create's event and the cache's entry for the key's life; an update writes
// the revisions in place in entries, which holds no pointers.
type keyIndex struct {
	slots   map[string]int32
	entries []indexEntry
	// free lists the entries of deleted keys, for the next creates.
	free []int32
}

func newKeyIndex() keyIndex {
	return keyIndex{slots: make(map[string]int32)}
}

// get returns key's revisions and whether the key is live.
func (x *keyIndex) get(key string) (indexEntry, bool) {
	i, ok := x.slots[key]
	if !ok {
		return indexEntry{}, false
	}
	return x.entries[i], true
}

// set records key's revisions, keeping the key string the index already
// holds for a live key.
func (x *keyIndex) set(key string, e indexEntry) {
	if i, ok := x.slots[key]; ok {
		x.entries[i] = e
		return
	}
	var i int32
	if n := len(x.free); n > 0 {
		i, x.free = x.free[n-1], x.free[:n-1]
		x.entries[i] = e
	} else {
		i = int32(len(x.entries))
		x.entries = append(x.entries, e)
	}
	x.slots[key] = i
}

// delete forgets key.
func (x *keyIndex) delete(key string) {
	i, ok := x.slots[key]
	if !ok {
		return
	}
	delete(x.slots, key)
	x.entries[i] = indexEntry{}
	x.free = append(x.free, i)
}

// len returns the number of live keys.
func (x *keyIndex) len() int { return len(x.slots) }

// reset forgets every key, keeping the memory for the rebuild that follows.
func (x *keyIndex) reset() {
	clear(x.slots)
	x.entries = x.entries[:0]
	x.free = x.free[:0]
}
