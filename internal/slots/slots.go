// Package slots is a table of values by string key, kept in a chunked arena
// and reached through small integer ids: what the in-process controllers use
// to remember something about every object of a fleet (the garbage
// collector's graph, the node lifecycle controller's node states).
//
// Why: a map from key to a pointer makes one heap object per value, which
// the Go collector marks on every cycle; a map from key to value moves the
// value when the map grows and gives no stable address. Here values live in
// chunks of 1,024 that never move, so a *T stays valid while its key is in
// the table, growing copies nothing, and at 100,000 objects the collector
// sees a hundred chunks instead of 100,000 objects. An id is an int32, so a
// value can point at another (an owner, a dependent) in four bytes.
//
// A value holds its own key (New is told where), and the table finds ids
// through an Index of that key rather than a map holding it again: at
// 20,000 fleet nodes a map[string]ID cost about 45 B per key, the Index 5
// to 11 (heap-per-node.sh).
//
// Invariants: id 0 is never given out (a zero id means "none" to callers);
// a released id is reused by a later key, and its value is zeroed on
// release. A Table is not safe for concurrent use: its owner serialises
// access (the controllers' own goroutine or lock).
package slots

import "hash/maphash"

// chunkBits sizes the chunks: 1,024 values each.
const chunkBits = 10

// Table maps keys to values addressed by ids of type ID. The zero Table is
// not usable: create one with New.
type Table[T any, ID ~int32] struct {
	index  *Index[string, ID]
	chunks [][]T
	free   []ID
	// key returns where a value holds its key.
	key func(*T) *string
}

// New returns an empty table whose values hold their key where key says.
// Slot writes it there; the caller never changes it.
func New[T any, ID ~int32](key func(*T) *string) *Table[T, ID] {
	t := &Table[T, ID]{
		chunks: [][]T{make([]T, 1, 1<<chunkBits)}, // id 0 is none
		key:    key,
	}
	t.index = NewIndex(maphash.String, func(id ID) string { return *key(t.At(id)) })
	return t
}

// At returns the value of id, which must have been given out by Slot and
// not released since.
func (t *Table[T, ID]) At(id ID) *T {
	return &t.chunks[id>>chunkBits][id&(1<<chunkBits-1)]
}

// Lookup returns key's id and value, or 0 and nil if the table has none.
func (t *Table[T, ID]) Lookup(key string) (ID, *T) {
	id, ok := t.index.Get(key)
	if !ok {
		return 0, nil
	}
	return id, t.At(id)
}

// Slot returns key's id, giving key a zero value first (holding key) if it
// has none: created is then true.
func (t *Table[T, ID]) Slot(key string) (id ID, created bool) {
	if id, ok := t.index.Get(key); ok {
		return id, false
	}
	if n := len(t.free); n > 0 {
		id = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		last := len(t.chunks) - 1
		if len(t.chunks[last]) == 1<<chunkBits {
			t.chunks = append(t.chunks, make([]T, 0, 1<<chunkBits))
			last++
		}
		id = ID(last<<chunkBits | len(t.chunks[last]))
		t.chunks[last] = t.chunks[last][:len(t.chunks[last])+1]
	}
	var zero T
	v := t.At(id)
	*v = zero
	*t.key(v) = key
	t.index.Put(key, id)
	return id, true
}

// Release forgets key, whose id is id: the value is zeroed and the id
// reused by a later Slot.
func (t *Table[T, ID]) Release(key string, id ID) {
	t.index.Remove(key, id)
	var zero T
	*t.At(id) = zero
	t.free = append(t.free, id)
}

// Len is the number of keys held.
func (t *Table[T, ID]) Len() int { return t.index.Len() }

// Keys calls fn with every key held and its id, in no particular order.
func (t *Table[T, ID]) Keys(fn func(key string, id ID)) {
	t.index.All(func(id ID) { fn(*t.key(t.At(id)), id) })
}

// Values calls fn with every value slot ever given out that keep reports
// as held, in id order (released slots are zero values, so keep tells them
// apart, for example by their key field).
func (t *Table[T, ID]) Values(keep func(*T) bool, fn func(*T)) {
	for _, chunk := range t.chunks {
		for i := range chunk {
			if keep(&chunk[i]) {
				fn(&chunk[i])
			}
		}
	}
}
