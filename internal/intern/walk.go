package intern

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"unsafe"

	"k8s.io/apimachinery/pkg/types"
)

// walkFunc interns what the value of its plan's type at p holds. like points
// at the value at the same place in an object of the same type whose
// strings may be taken over, or is nil when there is none.
//
// Plans address values by pointer and field offset rather than through
// reflect.Value: a walk visits every field of every object the cache
// decodes, and reflect.Value's bookkeeping per field was most of its cost
// once equal strings no longer needed a table lookup. Every pointer a walk
// forms points into the object it was given (a field, or an element below a
// slice's length), and every write goes through a typed pointer, so the
// garbage collector sees them as it sees ordinary Go code.
type walkFunc func(t *Table, p, like unsafe.Pointer)

// skippedField names the fields left alone: see the package comment.
const skippedField = "ResourceVersion"

// Object interns every string, []byte and string-keyed map entry reachable
// through exported fields from obj, which must be a non-nil pointer.
// Interfaces are not followed. obj must not be shared with other goroutines
// yet: its fields are rewritten.
func (t *Table) Object(obj any) {
	t.ObjectLike(obj, nil)
}

// ObjectLike is Object for obj given like, an object of the same type that
// is already interned, typically the previous version of the same object.
// A string (or []byte) equal to the one at the same place in like is
// replaced by like's: one comparison instead of a hash and a lookup in a
// table as large as everything cached, and a renewal changes almost none of
// its object's strings. The rest are interned as Object does; so are map
// entries, which are not matched up. like is only read. With a like of
// another type, or nil, ObjectLike is Object.
//
// obj may share memory with like: a pointer, slice or map of obj that is
// like's own at the same place is left alone, since like's walk interned
// what it holds, and walking it again would write into memory other
// goroutines read (a renewal recognized on the wire is the cached lease
// with a new renewal time, objects.Store.RenewalFromWire).
func (t *Table) ObjectLike(obj, like any) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	var lp unsafe.Pointer
	if l := reflect.ValueOf(like); l.IsValid() && l.Type() == v.Type() {
		lp = l.UnsafePointer()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if w := t.planLocked(v.Type().Elem()); w != nil {
		w(t, v.UnsafePointer(), lp)
	}
}

// planLocked returns the walk for values of type typ, or nil if they hold
// nothing to intern. Plans are built once per type; a recursive type gets a
// forwarding walk while its own plan is being built.
func (t *Table) planLocked(typ reflect.Type) walkFunc {
	if w, ok := t.plans[typ]; ok {
		return w
	}
	var built walkFunc
	t.plans[typ] = func(t *Table, p, like unsafe.Pointer) {
		if built != nil {
			built(t, p, like)
		}
	}
	built = t.buildLocked(typ)
	t.plans[typ] = built
	return built
}

// uidType is left out of the table: see takeFromLike.
var uidType = reflect.TypeFor[types.UID]()

func (t *Table) buildLocked(typ reflect.Type) walkFunc {
	switch typ.Kind() {
	case reflect.String:
		if typ == uidType {
			return takeFromLike
		}
		return internString
	case reflect.Slice:
		if typ.Elem().Kind() == reflect.Uint8 {
			return internBytes
		}
		return t.sliceLocked(typ)
	case reflect.Array:
		return t.arrayLocked(typ)
	case reflect.Pointer:
		if typ.Elem().Kind() == reflect.Bool {
			return canonicalBool
		}
		return t.pointerLocked(typ)
	case reflect.Struct:
		return t.structLocked(typ)
	case reflect.Map:
		return t.mapLocked(typ)
	}
	return nil
}

// sliceHeader is the layout of every slice value.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// pointerLocked interns what the pointer points at and then, when like's
// pointer points at an equal value, takes like's pointer: a lease renewal's
// holder, duration, acquire time and transitions are otherwise heap objects
// of their own in every version the cache keeps.
func (t *Table) pointerLocked(typ reflect.Type) walkFunc {
	elem := t.planLocked(typ.Elem())
	size := typ.Elem().Size()
	return func(t *Table, p, like unsafe.Pointer) {
		q := *(*unsafe.Pointer)(p)
		if q == nil {
			return
		}
		var lq unsafe.Pointer
		if like != nil {
			lq = *(*unsafe.Pointer)(like)
		}
		if q == lq {
			return
		}
		if elem != nil {
			elem(t, q, lq)
		}
		if lq != nil && lq != q && sameMemory(q, lq, size) {
			*(*unsafe.Pointer)(p) = lq
		}
	}
}

// sliceLocked interns the elements and then, when like's slice holds equal
// elements, takes like's slice (clipped, so an append copies instead of
// writing into like): a lease's owner references are the same in every
// version.
func (t *Table) sliceLocked(typ reflect.Type) walkFunc {
	elem := t.planLocked(typ.Elem())
	size := typ.Elem().Size()
	return func(t *Table, p, like unsafe.Pointer) {
		s := (*sliceHeader)(p)
		var l sliceHeader
		if like != nil {
			l = *(*sliceHeader)(like)
		}
		if s.data == l.data {
			return
		}
		if elem != nil {
			for i := range s.len {
				var le unsafe.Pointer
				if i < l.len {
					le = unsafe.Add(l.data, uintptr(i)*size)
				}
				elem(t, unsafe.Add(s.data, uintptr(i)*size), le)
			}
		}
		if s.len > 0 && l.len == s.len && l.data != s.data && sameMemory(s.data, l.data, uintptr(s.len)*size) {
			*s = sliceHeader{data: l.data, len: l.len, cap: l.len}
		}
	}
}

// sameMemory tells whether the n bytes at a and b are equal. Equal memory
// is an equal value for every type: equal pointers, slice headers and map
// or interface words refer to the same things, and equal strings were made
// to share their bytes by the walk of the elements just before. Values that
// are equal but laid out differently (strings not shared, padding) only
// compare unequal, which keeps a value from being taken, never wrongly
// takes one.
func sameMemory(a, b unsafe.Pointer, n uintptr) bool {
	return n == 0 || bytes.Equal(unsafe.Slice((*byte)(a), n), unsafe.Slice((*byte)(b), n))
}

func (t *Table) arrayLocked(typ reflect.Type) walkFunc {
	elem := t.planLocked(typ.Elem())
	if elem == nil || typ.Len() == 0 {
		return nil
	}
	size, n := typ.Elem().Size(), typ.Len()
	return func(t *Table, p, like unsafe.Pointer) {
		for i := range n {
			var le unsafe.Pointer
			if like != nil {
				le = unsafe.Add(like, uintptr(i)*size)
			}
			elem(t, unsafe.Add(p, uintptr(i)*size), le)
		}
	}
}

func (t *Table) structLocked(typ reflect.Type) walkFunc {
	type field struct {
		offset uintptr
		walk   walkFunc
	}
	var fields []field
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !f.IsExported() || f.Name == skippedField {
			continue
		}
		if w := t.planLocked(f.Type); w != nil {
			fields = append(fields, field{f.Offset, w})
		}
	}
	if len(fields) == 0 {
		return nil
	}
	return func(t *Table, p, like unsafe.Pointer) {
		for _, f := range fields {
			var lf unsafe.Pointer
			if like != nil {
				lf = unsafe.Add(like, f.offset)
			}
			f.walk(t, unsafe.Add(p, f.offset), lf)
		}
	}
}

// mapLocked interns the keys of string-keyed maps and their values.
// Assigning to an existing key replaces the stored key too (Go updates
// string keys on assignment), so the entry count never changes. Map values
// are not addressable: a value with fields to intern is interned as a copy
// and stored back.
func (t *Table) mapLocked(typ reflect.Type) walkFunc {
	if typ == reflect.TypeFor[map[string]string]() {
		return internStringMap
	}
	if typ.Key().Kind() != reflect.String {
		return nil
	}
	elem := t.planLocked(typ.Elem())
	return func(t *Table, p, like unsafe.Pointer) {
		if sameMap(p, like) {
			return
		}
		v := reflect.NewAt(typ, p).Elem()
		for iter := v.MapRange(); iter.Next(); {
			val := iter.Value()
			if elem != nil {
				c := reflect.New(typ.Elem())
				c.Elem().Set(val)
				elem(t, c.UnsafePointer(), nil)
				val = c.Elem()
			}
			key := reflect.New(typ.Key()).Elem()
			key.SetString(t.stringLocked(iter.Key().String()))
			v.SetMapIndex(key, val)
		}
	}
}

// internStringMap is mapLocked for labels and annotations, without
// reflection.
func internStringMap(t *Table, p, like unsafe.Pointer) {
	if sameMap(p, like) {
		return
	}
	m := *(*map[string]string)(p)
	for k, val := range m {
		m[t.stringLocked(k)] = t.stringLocked(val)
	}
}

// sameMap tells whether the maps at p and like (when not nil) are one map:
// a map value is a pointer to the map.
func sameMap(p, like unsafe.Pointer) bool {
	return like != nil && *(*unsafe.Pointer)(p) == *(*unsafe.Pointer)(like)
}

// takeFromLike replaces the string at p by like's when they are equal, and
// leaves it alone otherwise. It is the walk for uids: a uid names one
// object, so the table could only share it between an object and the
// references to it, while it would hold an entry (and a weak pointer) for
// every object cached.
func takeFromLike(_ *Table, p, like unsafe.Pointer) {
	if like == nil {
		return
	}
	if s, l := (*string)(p), *(*string)(like); *s == l {
		*s = l
	}
}

// canonicalBool points the *bool at p at the table's own true or false: an
// optional bool (an owner reference's controller and blockOwnerDeletion) is
// otherwise a heap object of its own in every object.
func canonicalBool(t *Table, p, _ unsafe.Pointer) {
	b := (**bool)(p)
	switch {
	case *b == nil:
	case **b:
		*b = &t.bools[1]
	default:
		*b = &t.bools[0]
	}
}

func internString(t *Table, p, like unsafe.Pointer) {
	s := (*string)(p)
	if *s == "" {
		return
	}
	if like != nil {
		if l := *(*string)(like); l == *s {
			*s = l
			return
		}
	}
	*s = t.stringLocked(*s)
}

// internBytes makes the []byte at p alias the canonical string with its
// bytes (capacity equal to length, so an append copies instead of writing
// into it), or like's bytes when they are equal.
func internBytes(t *Table, p, like unsafe.Pointer) {
	b := (*[]byte)(p)
	if len(*b) == 0 {
		return
	}
	if like != nil {
		if l := *(*[]byte)(like); bytes.Equal(l, *b) {
			*b = slices.Clip(l)
			return
		}
	}
	s := unsafe.String(&(*b)[0], len(*b))
	if strings.Contains(s, uidKey) {
		return
	}
	s = t.stringLocked(s)
	*b = unsafe.Slice(unsafe.StringData(s), len(s))
}

// uidKey starts a managedFields set's key for a list item keyed by uid, as
// JSON writes it inside the set: `"k:{\"uid\":\"…\"}"`. A set that holds one
// (every node lease's, whose owner reference to its Node is such an item)
// names a uid, so like a uid it belongs to one object and is taken only
// from a previous version: through the table it shared nothing and cost an
// entry and a weak pointer per lease, 66 B of the 3,024 B of live heap per
// node at 20,000 nodes (scripts/heap-per-node.sh, MemProfileRate 4096).
const uidKey = `k:{\"uid\":`
