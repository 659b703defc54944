package watchcache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/leasehold/leasehold/internal/clock"
	"github.com/leasehold/leasehold/internal/storage"
)

const (
	// listPageSize bounds one storage List call so a large prefix is read in
	// pages (all at one revision) instead of one huge allocation.
	listPageSize = 10_000
	// maxBatch bounds the storage events merged from several of the store's
	// batches and applied under one lock acquisition: batching amortises
	// the lock and the wake-up, the cap keeps readers from waiting long (a
	// single store batch larger than it is applied whole).
	maxBatch   = 512
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// Run fills the cache and keeps it in sync until ctx ends: it lists the prefix,
// watches from the list's revision, re-watches from the last applied revision
// when the storage watch closes, and re-lists (ending the watchers, see
// replace) when that revision was compacted away. Storage errors are logged
// and retried with backoff. Run returns nil when ctx ends; watchers are
// closed then. It may be called once.
func (c *Cache) Run(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return errors.New("watch cache: Run called twice")
	}
	defer close(c.done)
	if c.opts.Encode != nil {
		var demoter sync.WaitGroup
		demoter.Go(func() { c.demote(ctx) })
		defer demoter.Wait()
	}
	backoff := minBackoff
	needList := true
	for ctx.Err() == nil {
		if needList {
			if err := c.list(ctx); err != nil {
				c.log.Error("listing storage failed; retrying", "err", err, "backoff", backoff)
				backoff = backOff(ctx, backoff)
				continue
			}
			needList = false
			backoff = minBackoff
		}
		from := c.Revision()
		ch, err := c.store.Watch(ctx, c.opts.Prefix, from, storage.WithoutPrevValue, storage.WithProgressNotify)
		if errors.Is(err, storage.ErrCompacted) {
			c.log.Warn("storage history compacted past the cache; re-listing", "revision", from)
			needList = true
			continue
		}
		if err != nil {
			c.log.Error("watching storage failed; retrying", "revision", from, "err", err, "backoff", backoff)
			backoff = backOff(ctx, backoff)
			continue
		}
		if c.consume(ctx, ch) > 0 {
			backoff = minBackoff
		} else if ctx.Err() == nil {
			// A watch that closes at once, repeatedly, must not spin.
			backoff = backOff(ctx, backoff)
		}
		if ctx.Err() == nil {
			c.log.Info("storage watch ended; re-watching", "revision", c.Revision())
		}
	}
	return nil
}

// list reads the whole prefix at one revision, page by page, and replaces the
// cache's content with it.
func (c *Cache) list(ctx context.Context) error {
	var (
		kvs []decodedKV
		rev int64
		opt = storage.ListOptions{Limit: listPageSize}
	)
	for {
		page, err := c.store.List(ctx, c.opts.Prefix, opt)
		if err != nil {
			return fmt.Errorf("listing %s at revision %d: %w", c.opts.Prefix, opt.Revision, err)
		}
		rev = page.Revision
		for _, kv := range page.KVs {
			obj, err := c.opts.Decode(kv.Key, kv.Value, kv.ModRevision, nil)
			if err != nil {
				c.log.Error("cannot decode stored object; leaving it out of the cache",
					"key", kv.Key, "revision", kv.ModRevision, "err", err)
				continue
			}
			kvs = append(kvs, decodedKV{key: kv.Key, obj: obj, modRev: kv.ModRevision})
		}
		if !page.More || len(page.KVs) == 0 {
			break
		}
		// Later pages read the same revision so the whole list is one snapshot.
		opt.Revision = rev
		opt.StartKey = page.KVs[len(page.KVs)-1].Key + "\x00"
	}
	c.replace(kvs, rev)
	select {
	case <-c.ready:
	default:
		close(c.ready)
	}
	return nil
}

// consume applies storage events until ch closes or ctx ends and returns how
// many it applied. The store's batches already queued are applied together,
// up to maxBatch events, under one lock acquisition and one wake-up.
func (c *Cache) consume(ctx context.Context, ch <-chan []storage.Event) int {
	n := 0
	// merged collects several store batches; one store batch is applied as
	// it is (shared and read-only, and nothing keeps it past applyBatch).
	merged := make([]storage.Event, 0, maxBatch)
	for {
		var batch []storage.Event
		select {
		case <-ctx.Done():
			return n
		case evs, ok := <-ch:
			if !ok {
				return n
			}
			batch = evs
		}
		open := true
	drain:
		for len(batch) < maxBatch {
			select {
			case evs, ok := <-ch:
				if !ok {
					open = false
					break drain
				}
				if len(merged) == 0 {
					merged = append(merged, batch...)
				}
				merged = append(merged, evs...)
				batch = merged
			default:
				break drain
			}
		}
		c.applyBatch(c.decode(batch))
		n += len(batch)
		clear(merged) // keep no applied values alive
		merged = merged[:0]
		if !open {
			return n
		}
	}
}

// backOff waits d (or until ctx ends) and returns the next backoff.
func backOff(ctx context.Context, d time.Duration) time.Duration {
	clock.Sleep(ctx, d)
	return min(2*d, maxBackoff)
}
