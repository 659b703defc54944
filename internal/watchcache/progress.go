package watchcache

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/internal/storage"
)

// progressInterval is how often reads waiting for the cache ask the store
// for progress, as kube-apiserver's cache does for consistent reads
// (KEP-2340: every 100 ms while reads wait).
const progressInterval = 100 * time.Millisecond

// progressRequests keeps the cache's progress requests (KEP-1904): the
// store's revision moves with writes outside the cache's prefix too
// (another installation's prefix, another program), and then no event
// brings the cache to it. A read that must see the store's newest
// revision would wait for the next write under the prefix, which may
// never come; asking the store for progress makes its watch report the
// revision it has delivered everything up to (storage.EventProgress).
type progressRequests struct {
	// last is when the last request went out (Unix nanoseconds): all
	// waiting reads share one request per interval.
	last atomic.Int64
	// unsupported is set once the store said it cannot report progress.
	unsupported atomic.Bool
}

// progressTicks returns a channel on which a waiting read should ask for
// progress again (nil when the store cannot report it) and its stop.
func (c *Cache) progressTicks() (<-chan time.Time, func()) {
	if _, ok := c.store.(storage.ProgressRequester); !ok || c.progress.unsupported.Load() {
		return nil, func() {}
	}
	t := time.NewTicker(progressInterval)
	return t.C, t.Stop
}

// requestProgress asks the store for a progress event, unless another read
// did within the interval.
func (c *Cache) requestProgress(ctx context.Context) {
	pr, ok := c.store.(storage.ProgressRequester)
	if !ok || c.progress.unsupported.Load() {
		return
	}
	now := time.Now().UnixNano()
	last := c.progress.last.Load()
	if now-last < int64(progressInterval) || !c.progress.last.CompareAndSwap(last, now) {
		return
	}
	if err := pr.RequestProgress(ctx); err != nil {
		if errors.Is(err, errors.ErrUnsupported) {
			c.progress.unsupported.Store(true)
			c.log.Info("the store cannot report watch progress; reads wait for events alone", "err", err)
			return
		}
		if ctx.Err() == nil {
			c.log.Debug("requesting watch progress", "err", err)
		}
	}
}

// progressLocked applies a storage.EventProgress at rev: every change up to
// rev is in the cache, so its revision moves there, with no event. The
// caller holds c.mu for writing.
func (c *Cache) progressLocked(rev int64) {
	c.rev = max(c.rev, rev)
}
