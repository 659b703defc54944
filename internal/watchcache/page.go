package watchcache

import (
	"context"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
)

// PageRequest selects one page of the current objects.
type PageRequest struct {
	// Prefix limits the page to keys starting with it.
	Prefix string
	// Start is the first key to consider: a previous page's Next, or ""
	// to start at Prefix.
	Start string
	// Limit is the most objects the page holds; 0 or less means no limit.
	Limit int
	// Predicate selects objects (nil = all). It may run under the cache's
	// read lock: it must be quick and must not call back into the cache.
	Predicate func(runtime.Object) bool
}

// Page is one page of current objects in key order, all as of Revision.
// Its objects are shared: DeepCopy them before changing them.
type Page struct {
	Objects  []runtime.Object
	Revision int64
	// Next is the key the following page starts at (its PageRequest.Start),
	// or "" when no key under the prefix follows this page. A page may hold
	// fewer than Limit objects and still have a Next: cold objects judged
	// by a predicate after the walk (see below) can turn out not to match.
	Next string
	// Remaining is how many keys under the prefix follow the page. It is
	// known (>= 0) only for a page that starts at the prefix, has no
	// predicate and has a Next, else -1: the count of a "/"-terminated
	// prefix is kept up to date, so no key after the page is visited.
	Remaining int64
	// Visited is how many entries the walk looked at: Limit at most, plus
	// the entries the predicate rejected on the way.
	Visited int

	releaseOnce sync.Once
	release     func()
}

// Release gives the page's share of Options.ListBudget back. Call it once
// the page's objects are no longer needed (encoded into the response);
// calling it again does nothing.
func (p *Page) Release() {
	p.releaseOnce.Do(func() {
		if p.release != nil {
			p.release()
		}
	})
}

// ListPage returns one page of the current objects under req.Prefix, in
// key order, at one revision. It visits keys from req.Start and stops at
// the Limit-th match: a first page of 500 costs 500 objects, not the whole
// list. Hot (decoded) objects are judged under the read lock; cold ones
// are copied out and decoded after it is released, so their count is
// bounded by Limit too: the walk stops once matches plus cold candidates
// reach Limit.
//
// Pages hold objects until their caller is done with them, so ListPage
// first takes the page's size (Limit, or the number of keys under the
// prefix) from Options.ListBudget, waiting while concurrent pages hold it
// (a page larger than the whole budget waits for all of it); it returns
// ctx's error if ctx ends while waiting. The caller must call Release.
func (c *Cache) ListPage(ctx context.Context, req PageRequest) (*Page, error) {
	want := int64(c.estimate(req.Prefix))
	if req.Limit > 0 {
		want = min(want, int64(req.Limit))
	}
	held, err := c.lists.acquire(ctx, want)
	if err != nil {
		return nil, err
	}
	p := c.page(req)
	if used := min(held, int64(len(p.Objects))); used < held {
		c.lists.release(held - used)
		held = used
	}
	p.release = func() { c.lists.release(held) }
	return p, nil
}

// estimate is the number of keys under prefix (all keys, for a prefix
// without a count).
func (c *Cache) estimate(prefix string) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if n, ok := c.counts.count(prefix); ok {
		return n
	}
	return len(c.objects)
}

// page walks the keys of req under the read lock and resolves the cold
// entries it took after releasing it (see ListPage); it takes no budget.
func (c *Cache) page(req PageRequest) *Page {
	prefix, pred, limit := req.Prefix, req.Predicate, req.Limit
	from := max(prefix, req.Start)
	var (
		objs []runtime.Object
		// Cold entries are decoded and judged after the lock is released;
		// until then each holds a nil place in objs, at cold[i].at.
		cold    []coldPlace
		taken   int // hot matches and cold candidates
		visited int
		last    string
		more    bool
	)
	c.mu.RLock()
	total, counted := c.counts.count(prefix)
	if !counted {
		total = len(c.objects)
	}
	if limit > 0 {
		objs = make([]runtime.Object, 0, min(limit, total))
	} else {
		objs = make([]runtime.Object, 0, total)
	}
	c.sorted.AscendGreaterOrEqual(&entry{key: from}, func(e *entry) bool {
		if !strings.HasPrefix(e.key, prefix) {
			return false
		}
		if limit > 0 && taken == limit {
			more = true
			return false
		}
		visited++
		last = e.key
		switch {
		case e.obj == nil:
			cold = append(cold, coldPlace{at: len(objs), st: *e})
			objs = append(objs, nil)
			taken++
		case pred == nil || pred(e.obj):
			objs = append(objs, e.obj)
			taken++
		}
		return true
	})
	p := &Page{Revision: c.rev, Visited: visited, Remaining: -1}
	c.mu.RUnlock()

	if more {
		// The continue key convention of the API: the next key after last.
		p.Next = last + "\x00"
		if counted && pred == nil && from == prefix {
			p.Remaining = int64(total - visited)
		}
	}
	p.Objects = c.resolveCold(objs, cold, pred)
	return p
}

// resolveCold decodes and judges the cold entries whose places objs holds,
// and drops the places of those that do not match (or do not decode).
func (c *Cache) resolveCold(objs []runtime.Object, cold []coldPlace, pred func(runtime.Object) bool) []runtime.Object {
	if len(cold) == 0 {
		return objs
	}
	for _, p := range cold {
		if o, ok := c.resolve(p.st); ok && (pred == nil || pred(o)) {
			objs[p.at] = o
		}
	}
	kept := objs[:0]
	for _, o := range objs {
		if o != nil {
			kept = append(kept, o)
		}
	}
	clear(objs[len(kept):])
	return kept
}

// coldPlace is a cold entry to decode once the lock is released, and its
// place in the result.
type coldPlace struct {
	at int
	st entry
}
