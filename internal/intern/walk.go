package intern

import (
	"bytes"
	"reflect"
	"slices"
	"unsafe"
)

// walkFunc interns what v (addressable) holds. like is the value at the same
// place in an object of the same type whose strings may be taken over, or
// the zero Value when there is none.
type walkFunc func(t *Table, v, like reflect.Value)

// skippedField names the fields left alone: see the package comment.
const skippedField = "ResourceVersion"

// Object interns every string, []byte and string-keyed map entry reachable
// through exported fields from obj, which must be a non-nil pointer.
// Interfaces are not followed. obj must not be shared with other goroutines
// yet: its fields are rewritten.
func (t *Table) Object(obj any) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if w := t.planLocked(v.Type()); w != nil {
		w(t, v, reflect.Value{})
	}
}

// ObjectLike is Object for obj given like, an object of the same type that
// is already interned, typically the previous version of the same object.
// A string (or []byte) equal to the one at the same place in like is
// replaced by like's: one comparison instead of a hash and a lookup in a
// table as large as everything cached, and a renewal changes almost none of
// its object's strings. The rest are interned as Object does; so are map
// entries, which are not matched up. like is only read. With a like of
// another type, or nil, ObjectLike is Object.
func (t *Table) ObjectLike(obj, like any) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	l := reflect.ValueOf(like)
	if !l.IsValid() || l.Type() != v.Type() || l.IsNil() {
		l = reflect.Value{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if w := t.planLocked(v.Type()); w != nil {
		w(t, v, l)
	}
}

// elemLike is like's element i, or the zero Value when it has none.
func elemLike(like reflect.Value, i int) reflect.Value {
	if !like.IsValid() || i >= like.Len() {
		return reflect.Value{}
	}
	return like.Index(i)
}

// planLocked returns the walk for values of type typ, or nil if they hold
// nothing to intern. Plans are built once per type; a recursive type gets a
// forwarding walk while its own plan is being built.
func (t *Table) planLocked(typ reflect.Type) walkFunc {
	if w, ok := t.plans[typ]; ok {
		return w
	}
	var built walkFunc
	t.plans[typ] = func(t *Table, v, like reflect.Value) {
		if built != nil {
			built(t, v, like)
		}
	}
	built = t.buildLocked(typ)
	t.plans[typ] = built
	return built
}

func (t *Table) buildLocked(typ reflect.Type) walkFunc {
	switch typ.Kind() {
	case reflect.String:
		return internString
	case reflect.Slice, reflect.Array:
		if typ.Kind() == reflect.Slice && typ.Elem().Kind() == reflect.Uint8 {
			return internBytes
		}
		elem := t.planLocked(typ.Elem())
		if elem == nil {
			return nil
		}
		return func(t *Table, v, like reflect.Value) {
			for i := range v.Len() {
				elem(t, v.Index(i), elemLike(like, i))
			}
		}
	case reflect.Pointer:
		elem := t.planLocked(typ.Elem())
		if elem == nil {
			return nil
		}
		return func(t *Table, v, like reflect.Value) {
			if v.IsNil() {
				return
			}
			if like.IsValid() && !like.IsNil() {
				elem(t, v.Elem(), like.Elem())
			} else {
				elem(t, v.Elem(), reflect.Value{})
			}
		}
	case reflect.Struct:
		return t.structLocked(typ)
	case reflect.Map:
		return t.mapLocked(typ)
	}
	return nil
}

func (t *Table) structLocked(typ reflect.Type) walkFunc {
	type field struct {
		index int
		walk  walkFunc
	}
	var fields []field
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !f.IsExported() || f.Name == skippedField {
			continue
		}
		if w := t.planLocked(f.Type); w != nil {
			fields = append(fields, field{i, w})
		}
	}
	if len(fields) == 0 {
		return nil
	}
	return func(t *Table, v, like reflect.Value) {
		for _, f := range fields {
			if like.IsValid() {
				f.walk(t, v.Field(f.index), like.Field(f.index))
			} else {
				f.walk(t, v.Field(f.index), reflect.Value{})
			}
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
	return func(t *Table, v, _ reflect.Value) {
		for iter := v.MapRange(); iter.Next(); {
			val := iter.Value()
			if elem != nil {
				c := reflect.New(typ.Elem()).Elem()
				c.Set(val)
				elem(t, c, reflect.Value{})
				val = c
			}
			key := reflect.New(typ.Key()).Elem()
			key.SetString(t.stringLocked(iter.Key().String()))
			v.SetMapIndex(key, val)
		}
	}
}

// internStringMap is mapLocked for labels and annotations, without
// reflection.
func internStringMap(t *Table, v, _ reflect.Value) {
	m := v.Interface().(map[string]string)
	for k, val := range m {
		m[t.stringLocked(k)] = t.stringLocked(val)
	}
}

func internString(t *Table, v, like reflect.Value) {
	s := v.String()
	if s == "" {
		return
	}
	if like.IsValid() {
		if l := like.String(); l == s {
			v.SetString(l)
			return
		}
	}
	v.SetString(t.stringLocked(s))
}

// internBytes makes v alias the canonical string with its bytes (capacity
// equal to length, so an append copies instead of writing into it).
func internBytes(t *Table, v, like reflect.Value) {
	b := v.Bytes()
	if len(b) == 0 {
		return
	}
	if like.IsValid() {
		if l := like.Bytes(); bytes.Equal(l, b) {
			v.SetBytes(slices.Clip(l))
			return
		}
	}
	s := t.stringLocked(unsafe.String(&b[0], len(b)))
	v.SetBytes(unsafe.Slice(unsafe.StringData(s), len(s)))
}
