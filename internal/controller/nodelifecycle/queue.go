package nodelifecycle

import (
	"slices"

	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
)

// taintQueue is one zone's queue of nodes waiting for a NoExecute taint,
// drained through a token bucket (burst 1). A name stays known after it is
// processed, so a node already tainted is not queued again each pass;
// forget clears it (node healthy again, or its taint gone).
//
// Forgetting is O(1): the name leaves the state map and its place in
// pending goes stale (its generation no longer matches), to be dropped when
// drain reaches it or when stale places outnumber live ones. Removing it
// from the slice at once cost a scan and a copy of the queue per call, and
// a pass calls forget for every silent node: with 6,000 nodes waiting at
// the default 0.1 nodes/s that was 5% of the server's CPU in a 100,000-node
// run.
type taintQueue struct {
	clock   clock.Clock
	pending []queuedName
	state   map[string]queueState
	gen     uint64
	rate    float64
	limiter flowcontrol.RateLimiter // nil: rate 0, nothing passes
}

// queuedName is a place in the queue: live while its name's state has the
// same generation and is not processed.
type queuedName struct {
	name string
	gen  uint64
}

// queueState is a known name's: the generation of its place in the queue,
// and whether drain has processed it.
type queueState struct {
	gen       uint64
	processed bool
}

func newTaintQueue(c clock.Clock, rate float64) *taintQueue {
	q := &taintQueue{clock: c, state: map[string]queueState{}, rate: -1}
	q.setRate(rate)
	return q
}

// setRate swaps the limiter for one of rate nodes/s (0 stops the queue);
// an unchanged rate keeps the current bucket and its tokens.
func (q *taintQueue) setRate(rate float64) {
	if rate == q.rate {
		return
	}
	q.rate = rate
	if rate <= 0 {
		q.limiter = nil
		return
	}
	q.limiter = flowcontrol.NewTokenBucketRateLimiterWithClock(float32(rate), 1, q.clock)
}

// add queues name unless it is pending or was processed since it was last
// forgotten. It reports whether it was queued.
func (q *taintQueue) add(name string) bool {
	if _, ok := q.state[name]; ok {
		return false
	}
	q.gen++
	q.state[name] = queueState{gen: q.gen}
	q.pending = append(q.pending, queuedName{name: name, gen: q.gen})
	return true
}

// processed reports whether name was processed since it was last forgotten.
func (q *taintQueue) processed(name string) bool {
	return q.state[name].processed
}

// forget drops name from the queue and from the processed set.
func (q *taintQueue) forget(name string) {
	if _, ok := q.state[name]; !ok {
		return
	}
	delete(q.state, name)
	if stale := len(q.pending) - len(q.state); stale > 64 && stale > len(q.pending)/2 {
		q.pending = slices.DeleteFunc(q.pending, func(p queuedName) bool { return !q.live(p) })
	}
}

// live reports whether place p still holds its name's turn.
func (q *taintQueue) live(p queuedName) bool {
	s, ok := q.state[p.name]
	return ok && s.gen == p.gen && !s.processed
}

// drain hands queued names to fn in order while the limiter grants tokens.
// A name fn accepts stays known (processed); one it refuses goes to the back
// of the queue to be retried. Stale places cost no token.
func (q *taintQueue) drain(fn func(name string) bool) {
	for len(q.pending) > 0 {
		head := q.pending[0]
		if !q.live(head) {
			q.pending = q.pending[1:]
			continue
		}
		if q.limiter == nil || !q.limiter.TryAccept() {
			return
		}
		q.pending = q.pending[1:]
		if !fn(head.name) {
			q.pending = append(q.pending, head)
			return
		}
		q.state[head.name] = queueState{gen: head.gen, processed: true}
	}
}
