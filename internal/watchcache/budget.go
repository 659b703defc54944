package watchcache

import (
	"context"
	"fmt"
	"sync"
)

// budget is a first-come first-served counting semaphore of objects held
// by list pages. A request larger than the whole budget takes all of it
// (it runs alone); requests are granted in arrival order, so a large list
// is not starved by a stream of small ones.
type budget struct {
	mu      sync.Mutex
	size    int64
	avail   int64
	waiting []*budgetWaiter
}

type budgetWaiter struct {
	n     int64
	ready chan struct{} // closed when granted
}

func newBudget(size int64) *budget { return &budget{size: size, avail: size} }

// acquire takes n (at most the whole budget) and returns how much it took,
// to give back with release, or ctx's error if ctx ends first.
func (b *budget) acquire(ctx context.Context, n int64) (int64, error) {
	n = min(max(n, 0), b.size)
	b.mu.Lock()
	if len(b.waiting) == 0 && b.avail >= n {
		b.avail -= n
		b.mu.Unlock()
		return n, nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiting = append(b.waiting, w)
	b.mu.Unlock()

	select {
	case <-w.ready:
		return n, nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	select {
	case <-w.ready:
		// Granted while giving up: hand it back.
		b.avail += n
	default:
		for i, x := range b.waiting {
			if x == w {
				b.waiting = append(b.waiting[:i], b.waiting[i+1:]...)
				break
			}
		}
	}
	// Leaving the head of the queue may let those behind it in.
	b.grantLocked()
	b.mu.Unlock()
	return 0, fmt.Errorf("waiting for room to list %d objects: %w", n, ctx.Err())
}

// release gives back n taken by acquire.
func (b *budget) release(n int64) {
	b.mu.Lock()
	b.avail += n
	b.grantLocked()
	b.mu.Unlock()
}

// grantLocked admits waiters in order while the first one fits.
func (b *budget) grantLocked() {
	for len(b.waiting) > 0 && b.waiting[0].n <= b.avail {
		w := b.waiting[0]
		b.waiting = b.waiting[1:]
		b.avail -= w.n
		close(w.ready)
	}
}
