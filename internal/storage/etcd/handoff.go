package etcd

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
)

// handoffs carries the objects writers hand over with UpdateObject to the
// watch events of their writes (storage.Event.Object), so that the watch
// cache of the writing replica takes the object the API server already has
// instead of decoding the value etcd sends back. Decoding every renewal's
// value again was 6% of a replica's CPU profile under bench max on a
// 3-member etcd (scripts/etcd-ratio.sh), and is gone from it with this;
// on the shared 2-core machine it was measured on (load 15-20), the
// replica's CPU per 1,000 renewals varied more between rounds (250-300
// ms) than this moves it.
//
// etcd's answer to the transaction and the watch event of the write come
// back on different streams in either order, so the object is registered
// under the etcd key before the transaction is sent, with the value
// written, and the watch claims it for the first put event of that key
// whose value has exactly those bytes. Equal bytes decode to an equal
// object, so the claim is right even if another writer (another replica)
// happened to write the same bytes: whichever event takes the object
// carries the decoded form of its own value. Each object is claimed at
// most once, by one watch. A transaction that fails takes its object back
// (if nothing claimed it yet); a key holds only its newest object, so the
// table is bounded by the number of keys updated through UpdateObject,
// and an object no watch claims (nobody watches its key) stays until its
// key's next UpdateObject replaces it.
type handoffs struct {
	// pending counts the table's entries, so a watch on a replica that
	// hands nothing over (Update only) pays an atomic load per event and
	// no lock.
	pending atomic.Int64
	mu      sync.Mutex
	byKey   map[string]handoff
	seq     uint64
}

type handoff struct {
	value []byte
	obj   any
	// seq tells a transaction's own entry from a newer one for the same
	// key when it takes its object back.
	seq uint64
}

// put registers obj, the decoded form of value, for the next event of key
// (an etcd key) and returns the token that withdraw needs.
func (h *handoffs) put(key string, value []byte, obj any) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byKey == nil {
		h.byKey = map[string]handoff{}
	}
	h.seq++
	if _, ok := h.byKey[key]; !ok {
		h.pending.Add(1)
	}
	h.byKey[key] = handoff{value: value, obj: obj, seq: h.seq}
	return h.seq
}

// withdraw removes the entry put returned seq for, unless it was claimed
// or replaced already.
func (h *handoffs) withdraw(key string, seq uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, ok := h.byKey[key]; ok && e.seq == seq {
		delete(h.byKey, key)
		h.pending.Add(-1)
	}
}

// claim returns the object registered for key if its value is value, and
// removes it; nil otherwise.
func (h *handoffs) claim(key []byte, value []byte) any {
	if h.pending.Load() == 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.byKey[string(key)] // no allocation: the compiler converts in place for a lookup
	if !ok || !bytes.Equal(e.value, value) {
		return nil
	}
	delete(h.byKey, string(key))
	h.pending.Add(-1)
	return e.obj
}

// UpdateObject implements storage.ObjectWriter: Update, with obj handed to
// the watch event of the write (see handoffs).
func (s *Store) UpdateObject(ctx context.Context, key string, expectedRevision int64, value []byte, obj any) (int64, error) {
	if obj == nil {
		return s.Update(ctx, key, expectedRevision, value)
	}
	ek, err := s.keys.toEtcd(key)
	if err != nil {
		return 0, err
	}
	seq := s.handoffs.put(ek, value, obj)
	rev, err := s.update(ctx, key, ek, expectedRevision, value)
	if err != nil {
		s.handoffs.withdraw(ek, seq)
	}
	return rev, err
}
