// Package intern makes the objects the watch cache holds share the memory of
// their repeated strings.
//
// Why: a decoded object owns a fresh copy of every string in it. A fleet of
// 100,000 nodes holds 100,000 copies of each condition's reason and message,
// of every label key, and of the managedFields sets (several hundred bytes of
// JSON that are the same for every node), and each renewal of a lease in the
// cache's event window repeats its name, namespace, holder, owner and
// managedFields. Interning keeps one copy of each distinct value.
//
// How: a Table maps the hash of a string to weak pointers at the canonical
// copies, so a value stays canonical exactly as long as some object still
// references it, and entries whose value was collected are swept once the
// table has doubled since its last sweep. Object walks the exported fields
// of a decoded object by reflection (a plan per type, built once) and
// replaces every string, []byte and string-keyed map entry by its canonical
// copy; fields named ResourceVersion are left alone, as they differ in
// every version and would only churn the table. ObjectLike does the same
// given the previous version of the object, taking from it each string that
// is equal at the same place: with 100,000 leases the table's lookups miss
// the CPU caches, and a renewal repeats nearly every string.
// It also takes like's pointers and slices whose memory is equal once their
// elements are interned (a lease's holder, duration and owner references
// are otherwise heap objects of their own in every version cached).
//
// Two exceptions: uids (types.UID), and managedFields sets that key an
// item by uid, are only ever taken from a previous version, never from the
// table, since each names one object and the table would hold an entry (and
// a weak pointer) for every object while sharing almost none; and every *bool is pointed at the table's own true or false,
// one heap object fewer per optional bool.
//
// Invariants: interning never changes an object's value (it stays
// DeepEqual), only where its bytes live. A []byte is replaced by one that
// aliases a canonical string, so an interned object must never be written
// in place: this is the watch cache's rule already (objects are never
// mutated after publication; callers DeepCopy first, which copies the
// bytes). A Table is safe for concurrent use.
package intern
