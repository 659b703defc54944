package apiserver

import (
	"sync"
	"sync/atomic"
)

// boundedCache memoizes a pure function of a string key, for values that
// repeat across requests (Accept headers, identical managedFields sets of
// every node lease). It stops admitting new keys once full, so a client
// sending endless distinct keys costs a computation each, never memory.
type boundedCache[V any] struct {
	m       sync.Map
	n       atomic.Int64
	max     int64
	compute func(string) (V, bool)
}

func newBoundedCache[V any](max int64, compute func(string) (V, bool)) *boundedCache[V] {
	return &boundedCache[V]{max: max, compute: compute}
}

// get returns the value for key; ok=false when make said the key is invalid.
func (c *boundedCache[V]) get(key string) (V, bool) {
	if v, ok := c.m.Load(key); ok {
		e := v.(cacheEntry[V])
		return e.v, e.ok
	}
	v, ok := c.compute(key)
	if c.n.Load() < c.max {
		if _, loaded := c.m.LoadOrStore(key, cacheEntry[V]{v, ok}); !loaded {
			c.n.Add(1)
		}
	}
	return v, ok
}

type cacheEntry[V any] struct {
	v  V
	ok bool
}
