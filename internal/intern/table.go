package intern

import (
	"hash/maphash"
	"reflect"
	"strings"
	"sync"
	"unsafe"
	"weak"
)

// minSweep is the table size below which dead entries are not swept: a
// sweep of a small table frees too little to be worth the pass.
const minSweep = 4096

// Table holds the canonical copy of every string it has seen that is still
// referenced. The zero value is not usable: create one with New.
type Table struct {
	mu   sync.Mutex
	seed maphash.Seed
	// first maps a string's hash to a canonical copy; collisions, which are
	// rare with 64-bit hashes, go to more. One map entry per string instead
	// of a slice per hash keeps the table's own overhead small next to the
	// short strings it holds.
	first   map[uint64]canonical
	more    map[uint64][]canonical
	entries int
	// sweepAt is the entry count that triggers the next sweep.
	sweepAt int
	plans   map[reflect.Type]walkFunc
	// bools are the canonical false and true every interned *bool points
	// at; nothing writes them (interned objects are never written).
	bools [2]bool
}

// canonical is one canonical string, held weakly: its bytes are the first
// len bytes at the pointer's target.
type canonical struct {
	data weak.Pointer[byte]
	len  int
}

// value returns the canonical string, or false if it was collected.
func (c canonical) value() (string, bool) {
	p := c.data.Value()
	if p == nil {
		return "", false
	}
	return unsafe.String(p, c.len), true
}

// New returns an empty table.
func New() *Table {
	return &Table{
		seed:    maphash.MakeSeed(),
		first:   make(map[uint64]canonical),
		more:    make(map[uint64][]canonical),
		sweepAt: minSweep,
		plans:   make(map[reflect.Type]walkFunc),
		bools:   [2]bool{false, true},
	}
}

// String returns the canonical copy of s, making a copy of s canonical if
// the table has none that is live.
func (t *Table) String(s string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stringLocked(s)
}

func (t *Table) stringLocked(s string) string {
	if s == "" {
		return s
	}
	return t.canonicalLocked(maphash.String(t.seed, s), s)
}

// canonicalLocked is stringLocked for s with hash h.
func (t *Table) canonicalLocked(h uint64, s string) string {
	c, taken := t.first[h]
	if taken {
		if v, ok := c.value(); ok && v == s {
			return v
		}
		for _, c := range t.more[h] {
			if v, ok := c.value(); ok && v == s {
				return v
			}
		}
	}
	// A copy, not s itself: s may be a constant, or live on a stack, and a
	// weak pointer can only point into the heap.
	s = strings.Clone(s)
	c = canonical{data: weak.Make(unsafe.StringData(s)), len: len(s)}
	if _, live := t.first[h].value(); !taken || !live {
		// A free or dead first slot is reused (a dead one was counted already).
		t.first[h] = c
		if !taken {
			t.entries++
		}
	} else {
		t.more[h] = append(t.more[h], c)
		t.entries++
	}
	if t.entries >= t.sweepAt {
		t.sweepLocked()
	}
	return s
}

// sweepLocked drops the entries whose string was collected and sets the
// next sweep at twice the live size, so sweeping costs O(1) per insertion.
func (t *Table) sweepLocked() {
	live := 0
	for h, c := range t.first {
		if _, ok := c.value(); ok {
			live++
		} else {
			delete(t.first, h)
		}
	}
	for h, cs := range t.more {
		kept := cs[:0]
		for _, c := range cs {
			if _, ok := c.value(); ok {
				kept = append(kept, c)
			}
		}
		if len(kept) == 0 {
			delete(t.more, h)
			continue
		}
		clear(cs[len(kept):])
		t.more[h] = kept
		live += len(kept)
	}
	t.entries = live
	t.sweepAt = max(2*live, minSweep)
}

// Len is the number of entries, live or not yet swept.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.entries
}
