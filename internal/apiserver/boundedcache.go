package apiserver

import "sync"

// boundedCache memoizes a pure function of a string key, for values that
// repeat across requests (Accept headers, identical managedFields sets of
// every node lease). It stops admitting new keys once full, so a client
// sending endless distinct keys costs a computation each, never memory.
//
// A plain map under a read-write lock rather than a sync.Map: the cache is
// read on every renewal and written a handful of times, and a map lookup
// by m[string(b)] neither copies a []byte key nor boxes it in an interface.
type boundedCache[V any] struct {
	mu      sync.RWMutex
	m       map[string]cacheEntry[V]
	max     int
	compute func(string) (V, bool)
}

func newBoundedCache[V any](max int, compute func(string) (V, bool)) *boundedCache[V] {
	return &boundedCache[V]{m: map[string]cacheEntry[V]{}, max: max, compute: compute}
}

// get returns the value for key; ok=false when compute said the key is invalid.
func (c *boundedCache[V]) get(key string) (V, bool) {
	c.mu.RLock()
	e, hit := c.m[key]
	c.mu.RUnlock()
	if hit {
		return e.v, e.ok
	}
	return c.add(key)
}

// getBytes is get for a key held as bytes, without converting it to a
// string unless it is missing.
func (c *boundedCache[V]) getBytes(key []byte) (V, bool) {
	c.mu.RLock()
	e, hit := c.m[string(key)]
	c.mu.RUnlock()
	if hit {
		return e.v, e.ok
	}
	return c.add(string(key))
}

// add computes key's value outside the lock and keeps it while there is room.
func (c *boundedCache[V]) add(key string) (V, bool) {
	v, ok := c.compute(key)
	c.mu.Lock()
	if _, present := c.m[key]; !present && len(c.m) < c.max {
		c.m[key] = cacheEntry[V]{v, ok}
	}
	c.mu.Unlock()
	return v, ok
}

type cacheEntry[V any] struct {
	v  V
	ok bool
}
