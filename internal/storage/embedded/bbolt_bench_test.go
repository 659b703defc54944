package embedded

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/leasehold/leasehold/internal/storage"
)

// This file exists to check the choice of pebble with a measurement: the
// same group-committed update load on go.etcd.io/bbolt (etcd's engine), where
// each batch is one bbolt read-write transaction (one commit = the fsyncs of
// its pages and meta). It only measures; the driver does not use bbolt.

var (
	boltValues = []byte("values")
	boltLog    = []byte("log")
	boltMeta   = []byte("meta")
)

type boltReq struct {
	key      string
	value    []byte
	expected int64
	done     chan writeResult
}

// boltCommitter mirrors the pebble committer's work per write: precondition
// against an in-memory index, read of the previous value for the log record,
// value + log record + meta revision written in the batch's one transaction.
type boltCommitter struct {
	db      *bolt.DB
	reqs    chan *boltReq
	index   map[string]int64
	rev     int64
	counter commitCounter
}

func (c *boltCommitter) run(ctx context.Context) {
	batch := make([]*boltReq, 0, defaultMaxBatch)
	results := make([]writeResult, 0, defaultMaxBatch)
	for {
		select {
		case req := <-c.reqs:
			batch = append(batch, req)
		case <-ctx.Done():
			return
		}
	gather:
		for len(batch) < defaultMaxBatch {
			select {
			case req := <-c.reqs:
				batch = append(batch, req)
			default:
				break gather
			}
		}
		results = results[:0]
		rev := c.rev
		pending := make(map[string]int64, len(batch))
		err := c.db.Update(func(tx *bolt.Tx) error {
			values, log := tx.Bucket(boltValues), tx.Bucket(boltLog)
			for _, req := range batch {
				cur, ok := pending[req.key]
				if !ok {
					cur = c.index[req.key]
				}
				if cur != req.expected {
					results = append(results, writeResult{err: storage.ErrConflict})
					continue
				}
				rev++
				rec := logRecord{typ: storage.EventPut, key: req.key, value: req.value, createRev: rev}
				if values.Get([]byte(req.key)) != nil {
					rec.prevModRev = cur
				}
				if err := values.Put([]byte(req.key), encodeCurrent(rev, rec.createRev)); err != nil {
					return err
				}
				if err := log.Put(logKey(rev)[1:], rec.encode()); err != nil {
					return err
				}
				pending[req.key] = rev
				results = append(results, writeResult{rev: rev})
			}
			return tx.Bucket(boltMeta).Put(metaRevision, encodeInt64(rev))
		})
		if err != nil {
			for i := range results {
				results[i] = writeResult{err: err}
			}
		} else {
			c.rev = rev
			for k, v := range pending {
				c.index[k] = v
			}
			c.counter.onCommit(len(pending), 0)
		}
		for i, req := range batch {
			req.done <- results[i]
		}
		clear(batch)
		batch = batch[:0]
	}
}

func (c *boltCommitter) put(ctx context.Context, key string, expected int64, value []byte) (int64, error) {
	req := &boltReq{key: key, value: value, expected: expected, done: make(chan writeResult, 1)}
	select {
	case c.reqs <- req:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	res := <-req.done
	return res.rev, res.err
}

func openBolt(b *testing.B) *bolt.DB {
	b.Helper()
	// NoFreelistSync as etcd runs bbolt: fewer pages to sync per commit.
	db, err := bolt.Open(filepath.Join(b.TempDir(), "bench.db"), 0o600, &bolt.Options{Timeout: time.Second, NoFreelistSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := db.Close(); err != nil {
			b.Error(err)
		}
	})
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{boltValues, boltLog, boltMeta} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkBboltUpdateParallel64 is BenchmarkUpdateParallel64 on bbolt.
func BenchmarkBboltUpdateParallel64(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &boltCommitter{db: openBolt(b), reqs: make(chan *boltReq), index: make(map[string]int64)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	revs := make([]int64, benchWriters)
	for w := range benchWriters {
		rev, err := c.put(ctx, fmt.Sprintf("/registry/leases/ns/node-%d", w), 0, leaseValue)
		if err != nil {
			b.Fatal(err)
		}
		revs[w] = rev
	}
	c.counter = commitCounter{}
	b.ResetTimer()
	start := time.Now()
	runWriters(b, func(w int) error {
		rev, err := c.put(ctx, fmt.Sprintf("/registry/leases/ns/node-%d", w), revs[w], leaseValue)
		if errors.Is(err, storage.ErrConflict) {
			return fmt.Errorf("writer %d: %w", w, err)
		}
		revs[w] = rev
		return err
	})
	c.counter.report(b, time.Since(start))
}
