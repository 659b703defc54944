package namespacelifecycle

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// forceLiveLookupTTL and maxRecentDeletes are kube-apiserver's: a namespace
// deleted within the last 30 s is read live while the cache still shows it
// Active; at most 100 are remembered.
const (
	forceLiveLookupTTL = 30 * time.Second
	maxRecentDeletes   = 100
)

// recentDeletes remembers the namespaces deleted lately, with expiry.
type recentDeletes struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	until map[string]time.Time
}

func newRecentDeletes(c clock.PassiveClock) *recentDeletes {
	return &recentDeletes{clock: c, until: map[string]time.Time{}}
}

// add remembers name for forceLiveLookupTTL, forgetting expired names and,
// when full, the one closest to expiry.
func (r *recentDeletes) add(name string) {
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for n, t := range r.until {
		if !now.Before(t) {
			delete(r.until, n)
		}
	}
	if _, ok := r.until[name]; !ok && len(r.until) >= maxRecentDeletes {
		var oldest string
		for n, t := range r.until {
			if oldest == "" || t.Before(r.until[oldest]) {
				oldest = n
			}
		}
		delete(r.until, oldest)
	}
	r.until[name] = now.Add(forceLiveLookupTTL)
}

// has reports whether name was deleted within forceLiveLookupTTL.
func (r *recentDeletes) has(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.until[name]
	return ok && r.clock.Now().Before(t)
}
