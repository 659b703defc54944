package watchcache

import (
	"bytes"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
)

// handoffs holds the objects writers hand to the cache with Expect, so that
// the event of their write publishes the writer's object instead of decoding
// the value the store sends back: a renewal would otherwise decode its lease
// twice, once from the request and once from the store (on a replica on etcd
// the second decode was 6% of its CPU profile under bench max). One table
// serves every store: the writer registers its object under the key, with
// the exact bytes it writes, before the write; the cache's decode step claims
// it for the first put of that key whose value has exactly those bytes.
//
// Registering before the write is what makes this work whatever the order in
// which the store answers the writer and delivers the event (etcd's answer
// and its watch event come back on different streams). Equal bytes decode to
// an equal object, so a claim is right even if another writer (another
// replica) wrote the same bytes. Each object is claimed at most once. A
// writer whose write fails takes its object back (Withdraw). A key holds its
// two newest objects: a writer renewing one key back to back registers its
// next write before the event of the previous one comes back (on etcd, the
// answer often arrives first), and with one slot per key only 25-32% of the
// objects handed over on a replica under bench max reached their event. The
// table is thus bounded by twice the number of keys written through Expect,
// and an object nobody claims stays until two newer ones of its key push it
// out.
type handoffs struct {
	// pending counts the table's objects, so a cache whose writers hand
	// nothing over pays an atomic load per event and no lock.
	pending atomic.Int64
	mu      sync.Mutex
	byKey   map[string]keyHandoffs
	seq     uint64
}

// keyHandoffs is a key's pending objects, oldest first; kept by value in the
// map (104 bytes, so Go stores it inline), it costs no allocation per write.
type keyHandoffs struct {
	n    int
	slot [2]handoff
}

// remove drops slot i, keeping the others in order.
func (k *keyHandoffs) remove(i int) {
	copy(k.slot[i:k.n], k.slot[i+1:k.n])
	k.n--
	k.slot[k.n] = handoff{}
}

type handoff struct {
	value []byte
	obj   runtime.Object
	// seq tells a write's own entry from a newer one for the same key when
	// it takes its object back.
	seq uint64
}

// Expect registers obj, the decoded form of value, as the object the event
// of the write of value to key publishes, and returns the token Withdraw
// needs. The caller calls it before the write and gives obj up with it:
// from then on the cache owns obj, sets its resourceVersion (Options.Adopt)
// and hands it to every reader, so the caller must neither read nor change
// it again. Options.Adopt must be set for the object to be taken.
func (c *Cache) Expect(key string, value []byte, obj runtime.Object) uint64 {
	h := &c.handoffs
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byKey == nil {
		h.byKey = map[string]keyHandoffs{}
	}
	h.seq++
	k := h.byKey[key]
	if k.n == len(k.slot) {
		k.remove(0)
	} else {
		h.pending.Add(1)
	}
	k.slot[k.n] = handoff{value: value, obj: obj, seq: h.seq}
	k.n++
	h.byKey[key] = k
	return h.seq
}

// Withdraw removes the object Expect registered with token, unless the
// cache claimed it already or a newer Expect of key replaced it: a writer
// calls it when its write failed.
func (c *Cache) Withdraw(key string, token uint64) {
	h := &c.handoffs
	h.mu.Lock()
	defer h.mu.Unlock()
	k, ok := h.byKey[key]
	if !ok {
		return
	}
	for i := range k.n {
		if k.slot[i].seq == token {
			h.take(key, &k, i)
			return
		}
	}
}

// claim returns the object registered for key if its value is value, and
// removes it; nil otherwise.
func (h *handoffs) claim(key string, value []byte) runtime.Object {
	if h.pending.Load() == 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	k, ok := h.byKey[key]
	if !ok {
		return nil
	}
	for i := range k.n {
		if sameBytes(k.slot[i].value, value) {
			obj := k.slot[i].obj
			h.take(key, &k, i)
			return obj
		}
	}
	return nil
}

// take removes slot i of key's objects k and stores what is left; the
// caller holds mu.
func (h *handoffs) take(key string, k *keyHandoffs, i int) {
	k.remove(i)
	h.pending.Add(-1)
	if k.n == 0 {
		delete(h.byKey, key)
	} else {
		h.byKey[key] = *k
	}
}

// sameBytes is bytes.Equal with a shortcut for the embedded store, whose
// event carries the very slice its writer wrote.
func sameBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	return bytes.Equal(a, b)
}
