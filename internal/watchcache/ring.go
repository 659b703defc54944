package watchcache

import (
	"sort"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// event is one change as kept in the window. prev is the object before the
// change (nil for a create): watchers with a predicate need it to turn a change
// into ADDED, MODIFIED or DELETED from their own point of view. prevSame says
// that every predicate judges prev as it judges obj (Options.SameSelection),
// and prev is then not kept. When the object before the change was cold,
// prev is nil and prevCold holds its cold value, at revision prevRev: only a
// watcher with a predicate decodes it (see Watcher.convert), so a change to
// a cold entry that nobody filters costs no decode.
type event struct {
	typ      watch.EventType
	key      string
	obj      runtime.Object
	prev     runtime.Object
	prevCold string
	prevRev  int64
	prevSame bool
	rev      int64
	// thin says obj was dropped for delta, to be rebuilt from the object
	// of the event with sequence number base (see thin.go).
	thin  bool
	base  uint64
	delta Delta
}

// ring is the bounded window of recent events. Every event gets a sequence
// number that never repeats; a watcher's cursor is the sequence number of the
// next event it will read, so "my next event was evicted" is one comparison.
// ring is not safe for concurrent use: the Cache's lock guards it.
type ring struct {
	buf  []event
	next uint64 // sequence number the next appended event gets
	len  int    // events kept, <= len(buf)
}

func newRing(size int) *ring {
	return &ring{buf: make([]event, size)}
}

// oldestSeq is the sequence number of the oldest event still kept.
func (r *ring) oldestSeq() uint64 { return r.next - uint64(r.len) }

// at returns the event with sequence number seq, which must be kept.
func (r *ring) at(seq uint64) *event { return &r.buf[seq%uint64(len(r.buf))] }

// push appends e and returns the event it evicted, if the window was full.
func (r *ring) push(e event) (evicted event, ok bool) {
	slot := &r.buf[r.next%uint64(len(r.buf))]
	if r.len == len(r.buf) {
		evicted, ok = *slot, true
	} else {
		r.len++
	}
	*slot = e
	r.next++
	return evicted, ok
}

// firstAfter returns the sequence number of the first kept event whose revision
// is > rev (r.next when there is none). Revisions in the ring never decrease,
// so a binary search finds it.
func (r *ring) firstAfter(rev int64) uint64 {
	oldest := r.oldestSeq()
	i := sort.Search(r.len, func(i int) bool { return r.at(oldest+uint64(i)).rev > rev })
	return oldest + uint64(i)
}
