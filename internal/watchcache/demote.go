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

// maxHoldRounds bounds how many demoter rounds a resource's objects may be
// held decoded once the demoter has found them written again soon after
// going cold (see holds): eight times ColdAfter, 2 minutes by default.
const maxHoldRounds = 8 * demoteRounds

// minRewrites is how many freezes of a resource's objects, and writes to
// its cold ones, within one ColdAfter it takes to hold the resource
// longer: fewer are left alone.
const minRewrites = 64

// demote runs until ctx ends. Every ColdAfter/demoteRounds it freezes the
// entries that have not changed since the round demoteRounds rounds ago
// (more for a resource it holds longer, see holds).
func (c *Cache) demote(ctx context.Context) {
	t := time.NewTicker(c.opts.ColdAfter / demoteRounds)
	defer t.Stop()
	d := newDemoter()
	var scratch []byte
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d.round(ctx, c, &scratch)
	}
}

// demoter is the demote goroutine's state.
//
// Holds: ColdAfter (15 s) is meant to be longer than the time between two
// writes of any object written periodically, a node lease's 10 s above
// all. An object written less often than that, say a lease renewed every
// 20 s (a kubelet whose nodeLeaseDurationSeconds is 80), went cold between
// every two writes: each renewal then decompressed and decoded it, and 15
// s later the demoter encoded and compressed it again. So the
// demoter counts, for each resource, the writes that found one of its
// objects cold (coldClass.rewrites) against the objects it froze; when,
// over one ColdAfter, the rewrites are at least half the freezes, the
// resource's objects are held decoded twice as long from then on, up to
// maxHoldRounds. A hold is never shortened: what it costs is memory
// bounded by the resource's objects in decoded form, which is what the
// cache held for them before they went cold; a restart starts afresh.
//
// Measured: 100,000 nodes renewing every 20 s on one pinned core, 3 min,
// one run each (PIN=1 scripts/bench-rate.sh BINARY OUT 3m --register-nodes
// --interval 20s, 2026-11-29); "steady" is the median of the generator's
// per-second p99s after the first minute:
//
//	no holds                                   154.6 CPU-µs/renewal  p99 147 ms  steady 75.8 ms
//	leases held 60 s (an earlier rule, below)  123.3                 p99  66 ms  steady 24.8 ms
//	leases held 30 s (this rule)               156.2                 p99 142 ms  steady 25.9 ms
//
// The last run's first 50 s fell behind (1,900-5,400 renewals/s) while the
// leases frozen during registration were thawed, and 8,246 nodes went not
// ready: its whole-run figures are that start's. The earlier rule also
// doubled a hold on rewrites alone, which after a hold are rewrites of
// objects frozen before it.
type demoter struct {
	// marks are the cache's revision at the last rounds, oldest first.
	marks [maxHoldRounds]int64
	// rounds counts the rounds run.
	rounds int
	// holds maps a resource (a cold class name) to the rounds its objects
	// must stay unchanged before they are frozen, for the resources held
	// longer than demoteRounds.
	holds map[string]int
	// counted is, for each resource, its classes' values and rewrites at
	// the last judgement.
	counted map[string][2]int64
}

func newDemoter() *demoter {
	return &demoter{holds: map[string]int{}, counted: map[string][2]int64{}}
}

// round freezes what has been unchanged long enough, records the cache's
// revision and, once per ColdAfter, judges the holds.
func (d *demoter) round(ctx context.Context, c *Cache, scratch *[]byte) {
	if mark := d.marks[maxHoldRounds-demoteRounds]; mark > 0 {
		var held func(key string, modRev int64) bool
		if len(d.holds) > 0 {
			held = func(key string, modRev int64) bool { return d.held(c.cold.className(key), modRev) }
		}
		c.freezeUpTo(ctx, mark, held, scratch)
	}
	copy(d.marks[:], d.marks[1:])
	d.marks[maxHoldRounds-1] = c.Revision()
	if d.rounds++; d.rounds%demoteRounds == 0 {
		d.judge(c)
	}
}

// held reports whether an entry of resource class (coldStore.className of
// its key), at revision modRev, is held longer and has not been unchanged
// for its hold yet.
func (d *demoter) held(class string, modRev int64) bool {
	rounds, ok := d.holds[class]
	if !ok {
		return false
	}
	mark := d.marks[maxHoldRounds-rounds]
	return mark == 0 || modRev > mark
}

// judge doubles the hold of every resource whose objects were written
// again while cold at least half as often as they were frozen since the
// last judgement, both at least minRewrites times (see demoter).
func (d *demoter) judge(c *Cache) {
	now := map[string][2]int64{}
	for _, cl := range *c.cold.classes.Load() {
		n := now[cl.name]
		n[0] += cl.values.Load()
		n[1] += cl.rewrites.Load()
		now[cl.name] = n
	}
	for name, n := range now {
		was := d.counted[name]
		d.counted[name] = n
		frozen, rewritten := n[0]-was[0], n[1]-was[1]
		// Both counts are of the same ColdAfter, while a write finds an
		// object cold that was frozen up to a hold earlier: without freezes
		// of its own (a hold just raised), the rewrites prove nothing.
		if frozen < minRewrites || rewritten < minRewrites || 2*rewritten < frozen {
			continue
		}
		hold := max(d.holds[name], demoteRounds)
		if hold >= maxHoldRounds {
			continue
		}
		d.holds[name] = min(2*hold, maxHoldRounds)
		c.log.Info("holding a resource's objects decoded longer: they are written again soon after going cold",
			"resource", name, "frozen", frozen, "writtenWhileCold", rewritten,
			"coldAfter", c.opts.ColdAfter*time.Duration(d.holds[name])/demoteRounds)
	}
}

// frozen is one entry to freeze: it is frozen only if it still holds obj.
type frozen struct {
	e    *entry
	obj  runtime.Object
	cold string
}

// freezeUpTo freezes the decoded entries whose revision is <= mark and
// that held (if not nil) does not hold back, a chunk at a time: it copies
// candidates under the read lock, encodes and compresses them with no lock
// held, and swaps them in under the write lock unless they changed
// meanwhile. It returns how many it froze.
func (c *Cache) freezeUpTo(ctx context.Context, mark int64, held func(key string, modRev int64) bool, scratch *[]byte) int {
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
			if e.obj != nil && e.modRev <= mark && (held == nil || !held(e.key, e.modRev)) {
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
