package nodelifecycle

import (
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
)

// taintQueue is one zone's queue of nodes waiting for a NoExecute taint,
// drained through a token bucket (burst 1). A name stays in the set after it
// is processed, so a node already tainted is not queued again each pass;
// forget clears it (node healthy again, or its taint gone).
type taintQueue struct {
	clock   clock.Clock
	pending []string
	known   map[string]bool
	rate    float64
	limiter flowcontrol.RateLimiter // nil: rate 0, nothing passes
}

func newTaintQueue(c clock.Clock, rate float64) *taintQueue {
	q := &taintQueue{clock: c, known: map[string]bool{}, rate: -1}
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
	if q.known[name] {
		return false
	}
	q.known[name] = true
	q.pending = append(q.pending, name)
	return true
}

// forget drops name from the queue and from the processed set.
func (q *taintQueue) forget(name string) {
	if !q.known[name] {
		return
	}
	delete(q.known, name)
	for i, n := range q.pending {
		if n == name {
			q.pending = append(q.pending[:i], q.pending[i+1:]...)
			break
		}
	}
}

// drain hands queued names to fn in order while the limiter grants tokens.
// A name fn accepts stays known (processed); one it refuses goes to the back
// of the queue to be retried.
func (q *taintQueue) drain(fn func(name string) bool) {
	for len(q.pending) > 0 {
		if q.limiter == nil || !q.limiter.TryAccept() {
			return
		}
		name := q.pending[0]
		q.pending = q.pending[1:]
		if !fn(name) {
			q.pending = append(q.pending, name)
			return
		}
	}
}
