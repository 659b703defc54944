package slots

import "hash/maphash"

// Index finds ids by a key that each id's value holds, in an
// open-addressing table of the ids alone (linear probing, at most three
// quarters full): 4 bytes a cell, 5 to 11 per id, where a Go map holding
// the key again (a string, or a 16-byte uid) cost 40-70 bytes per entry,
// the largest part of a graph entry's cost after the entry itself. The
// key of an id is read back through the function given to NewIndex, so
// the caller keeps each id's key fixed while the id is in the index
// (remove it before changing the key, put it back after).
//
// The zero Index is not usable: create one with NewIndex. Like a Table, an
// Index is not safe for concurrent use.
type Index[K comparable, ID ~int32] struct {
	seed maphash.Seed
	hash func(maphash.Seed, K) uint64
	key  func(ID) K
	ids  []ID // a power of two long, or empty; 0 is a free cell
	n    int  // cells in use
}

// NewIndex returns an empty index whose ids have the keys key returns,
// hashed by hash (maphash.String for strings, for instance).
func NewIndex[K comparable, ID ~int32](hash func(maphash.Seed, K) uint64, key func(ID) K) *Index[K, ID] {
	return &Index[K, ID]{seed: maphash.MakeSeed(), hash: hash, key: key}
}

// Len is the number of ids held.
func (x *Index[K, ID]) Len() int { return x.n }

// Get returns the id whose key is k.
func (x *Index[K, ID]) Get(k K) (ID, bool) {
	if x.n == 0 {
		return 0, false
	}
	id := x.ids[x.find(k)]
	return id, id != 0
}

// Put indexes id, whose key is k (the key function's answer for id),
// replacing the id that had k, if any.
func (x *Index[K, ID]) Put(k K, id ID) {
	if (x.n+1)*4 > len(x.ids)*3 {
		x.grow()
	}
	i := x.find(k)
	if x.ids[i] == 0 {
		x.n++
	}
	x.ids[i] = id
}

// Remove forgets k if id is the id that has it.
func (x *Index[K, ID]) Remove(k K, id ID) {
	if x.n == 0 {
		return
	}
	if i := x.find(k); x.ids[i] == id {
		x.free(i)
	}
}

// All calls fn with every id held, in no particular order.
func (x *Index[K, ID]) All(fn func(ID)) {
	for _, id := range x.ids {
		if id != 0 {
			fn(id)
		}
	}
}

// home is the cell where the probe for k starts.
func (x *Index[K, ID]) home(k K) int {
	return int(x.hash(x.seed, k) & uint64(len(x.ids)-1))
}

// find returns the cell holding the id whose key is k, or else the free
// cell that ends k's probe. The table must have a free cell.
func (x *Index[K, ID]) find(k K) int {
	mask := len(x.ids) - 1
	for i := x.home(k); ; i = (i + 1) & mask {
		if id := x.ids[i]; id == 0 || x.key(id) == k {
			return i
		}
	}
}

// free empties cell i, moving back the cells after it in its run that
// would no longer be reached past a free cell (no tombstones: a table that
// churns keeps its probes short).
func (x *Index[K, ID]) free(i int) {
	mask := len(x.ids) - 1
	for j := (i + 1) & mask; x.ids[j] != 0; j = (j + 1) & mask {
		// The id at j may fill i if its probe passes i before reaching j:
		// its home is at or before i (cyclically).
		if h := x.home(x.key(x.ids[j])); (j-h)&mask >= (j-i)&mask {
			x.ids[i] = x.ids[j]
			i = j
		}
	}
	x.ids[i] = 0
	x.n--
}

// grow doubles the table (8 cells at first) and places every id anew.
func (x *Index[K, ID]) grow() {
	old := x.ids
	x.ids = make([]ID, max(8, 2*len(old)))
	for _, id := range old {
		if id != 0 {
			x.ids[x.find(x.key(id))] = id
		}
	}
}
