package watchcache

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

// freezeChunk bounds the entries one demotion step scans under the read
// lock and then freezes under the write lock, so writers never wait long.
const freezeChunk = 4096

// demoteRounds is how many demoter rounds one ColdAfter spans: an entry goes
// cold between ColdAfter and ColdAfter*(1+1/demoteRounds) after its last
// change. Objects created together (a fleet registering) then leave the
// decoded state soon after ColdAfter instead of up to twice that later,
// which is what bounds the heap while they arrive.
const demoteRounds = 4

// demote runs until ctx ends. Every ColdAfter/demoteRounds it freezes the
// entries that have not changed since the round demoteRounds rounds ago.
func (c *Cache) demote(ctx context.Context) {
	t := time.NewTicker(c.opts.ColdAfter / demoteRounds)
	defer t.Stop()
	var (
		marks   [demoteRounds]int64 // the cache's revision at the last rounds, oldest first
		scratch []byte
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if marks[0] > 0 {
			c.freezeUpTo(ctx, marks[0], &scratch)
		}
		copy(marks[:], marks[1:])
		marks[demoteRounds-1] = c.Revision()
	}
}

// frozen is one entry to freeze: it is frozen only if it still holds obj.
type frozen struct {
	e    *entry
	obj  runtime.Object
	cold string
}

// freezeUpTo freezes the decoded entries whose revision is <= mark, a chunk
// at a time: it copies candidates under the read lock, encodes and
// compresses them with no lock held, and swaps them in under the write lock
// unless they changed meanwhile. It returns how many it froze.
func (c *Cache) freezeUpTo(ctx context.Context, mark int64, scratch *[]byte) int {
	n := 0
	from, more := "", true
	var batch []frozen
	for more && ctx.Err() == nil {
		batch = batch[:0]
		more = false
		scanned := 0
		c.mu.RLock()
		c.sorted.AscendGreaterOrEqual(&entry{key: from}, func(e *entry) bool {
			if scanned == freezeChunk {
				from, more = e.key, true
				return false
			}
			scanned++
			if e.obj != nil && e.modRev <= mark {
				batch = append(batch, frozen{e: e, obj: e.obj})
			}
			return true
		})
		c.mu.RUnlock()

		kept := batch[:0]
		for _, f := range batch {
			cold, err := c.freeze(f.e.key, f.obj, scratch)
			if err != nil {
				if !errors.Is(err, errTooManyClasses) {
					c.log.Error("cannot compress cached object; keeping it decoded", "key", f.e.key, "err", err)
				}
				continue
			}
			f.cold = cold
			kept = append(kept, f)
		}
		if len(kept) == 0 {
			continue
		}
		c.mu.Lock()
		for _, f := range kept {
			if f.e.obj == f.obj && c.objects[f.e.key] == f.e {
				f.e.obj, f.e.cold = nil, f.cold
				n++
			}
		}
		c.mu.Unlock()
	}
	return n
}

// freeze returns the cold value of obj, the object at key.
func (c *Cache) freeze(key string, obj runtime.Object, scratch *[]byte) (string, error) {
	stored, err := c.opts.Encode(obj)
	if err != nil {
		return "", err
	}
	return c.cold.freeze(key, stored, scratch)
}

// resolve returns the object of an entry copied under the lock, decoding it
// if it is cold; nothing for the zero entry (see copyOf). A cold value that
// does not decode (never expected: the cache encoded it itself) is logged
// and reported missing.
func (c *Cache) resolve(st entry) (runtime.Object, bool) {
	if st.obj != nil {
		return st.obj, true
	}
	if st.cold == "" {
		return nil, false
	}
	obj, err := c.cold.thaw(st.cold, func(stored []byte) (runtime.Object, error) {
		return c.opts.Decode(st.key, stored, st.modRev, nil)
	})
	if err != nil {
		c.log.Error("cannot decode cold cached object", "key", st.key, "revision", st.modRev, "err", err)
		return nil, false
	}
	return obj, true
}
