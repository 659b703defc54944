package embedded

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/storage"
)

// leaseValue is about the size of a protobuf-encoded Lease.
var leaseValue = make([]byte, 300)

const benchWriters = 64

// commitCounter counts batches and writes through Options.OnCommit.
type commitCounter struct {
	batches, writes atomic.Int64
}

func (c *commitCounter) onCommit(n int, _ time.Duration) {
	c.batches.Add(1)
	c.writes.Add(int64(n))
}

// report adds the figures the benchmarks exist for: throughput, fsyncs (one
// per batch) and the average batch size.
func (c *commitCounter) report(b *testing.B, elapsed time.Duration) {
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "writes/s")
	b.ReportMetric(float64(c.batches.Load())/elapsed.Seconds(), "fsyncs/s")
	if n := c.batches.Load(); n > 0 {
		b.ReportMetric(float64(c.writes.Load())/float64(n), "writes/batch")
	}
}

func BenchmarkUpdateSequential(b *testing.B) {
	ctx := context.Background()
	var c commitCounter
	s := openTest(b, Options{OnCommit: c.onCommit})
	rev, err := s.Create(ctx, "/registry/leases/ns/one", leaseValue)
	if err != nil {
		b.Fatal(err)
	}
	c = commitCounter{}
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if rev, err = s.Update(ctx, "/registry/leases/ns/one", rev, leaseValue); err != nil {
			b.Fatal(err)
		}
	}
	c.report(b, time.Since(start))
}

// BenchmarkUpdateParallel64 is the lease-renewal load: 64 writers, each
// updating its own key with its current revision.
func BenchmarkUpdateParallel64(b *testing.B) {
	ctx := context.Background()
	var c commitCounter
	s := openTest(b, Options{OnCommit: c.onCommit})
	revs := make([]int64, benchWriters)
	for w := range benchWriters {
		rev, err := s.Create(ctx, fmt.Sprintf("/registry/leases/ns/node-%d", w), leaseValue)
		if err != nil {
			b.Fatal(err)
		}
		revs[w] = rev
	}
	c = commitCounter{}
	b.ResetTimer()
	start := time.Now()
	runWriters(b, func(w int) error {
		rev, err := s.Update(ctx, fmt.Sprintf("/registry/leases/ns/node-%d", w), revs[w], leaseValue)
		revs[w] = rev
		return err
	})
	c.report(b, time.Since(start))
}

// runWriters spreads b.N calls of write over benchWriters goroutines; writer
// w only ever touches its own state, so write needs no locking.
func runWriters(b *testing.B, write func(w int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range benchWriters {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := write(w); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkGet(b *testing.B) {
	ctx := context.Background()
	s := openTest(b, Options{})
	const keys = 1000
	for i := range keys {
		if _, err := s.Create(ctx, fmt.Sprintf("/registry/leases/ns/node-%d", i), leaseValue); err != nil {
			b.Fatal(err)
		}
	}
	names := make([]string, keys)
	for i := range names {
		names[i] = fmt.Sprintf("/registry/leases/ns/node-%d", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if _, err := s.Get(ctx, names[i%keys]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkReopen100k measures Open (index rebuild included) of a store
// holding 100,000 lease-sized keys: how long a restart of a 100,000-node
// fleet's store takes before it serves.
func BenchmarkReopen100k(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	s := mustOpen(b, dir)
	const keys = 100_000
	var next atomic.Int64
	var wg sync.WaitGroup
	for range benchWriters {
		wg.Go(func() {
			for i := next.Add(1); i <= keys; i = next.Add(1) {
				if _, err := s.Create(ctx, fmt.Sprintf("/registry/leases/ns/node-%06d", i), leaseValue); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		s := mustOpen(b, dir)
		if s.index.len() != keys {
			b.Fatalf("reopened with %d keys, want %d", s.index.len(), keys)
		}
		b.StopTimer()
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkList100k measures a List of 100,000 lease-sized keys, each
// written three times, from a reopened store (so from sstables, as the watch
// cache's first list after a restart reads them): each key's value is read
// from its log record.
func BenchmarkList100k(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	s := mustOpen(b, dir)
	const keys, writes = 100_000, 3
	revs := make([]int64, keys)
	for round := range writes {
		// Writers share each round, so a key's revisions are not in key order.
		var next atomic.Int64
		var wg sync.WaitGroup
		for range benchWriters {
			wg.Go(func() {
				for k := next.Add(1) - 1; k < keys; k = next.Add(1) - 1 {
					key := fmt.Sprintf("/registry/leases/ns/node-%06d", k)
					var err error
					if round == 0 {
						revs[k], err = s.Create(ctx, key, leaseValue)
					} else {
						revs[k], err = s.Update(ctx, key, revs[k], leaseValue)
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	s = openAt(b, dir)
	b.ResetTimer()
	for b.Loop() {
		res, err := s.List(ctx, "/registry/leases/", storage.ListOptions{})
		if err != nil || len(res.KVs) != keys {
			b.Fatalf("listed %d keys, %v; want %d", len(res.KVs), err, keys)
		}
	}
}

// BenchmarkCompactSweep measures a compaction's sweep of the log: 64 writers
// renew 1,000 lease-sized keys for b.N writes, then one Compact at the newest
// revision deletes every record but each key's newest. ns/op is the sweep's
// time per record swept: what the automatic compactor pays for every write.
func BenchmarkCompactSweep(b *testing.B) {
	ctx := context.Background()
	s := openTest(b, Options{})
	const keys = 1000
	revs := make([]int64, keys)
	for i := range keys {
		rev, err := s.Create(ctx, fmt.Sprintf("/registry/leases/ns/node-%04d", i), leaseValue)
		if err != nil {
			b.Fatal(err)
		}
		revs[i] = rev
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range benchWriters {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				k := w + benchWriters*int(i%(keys/benchWriters))
				rev, err := s.Update(ctx, fmt.Sprintf("/registry/leases/ns/node-%04d", k), revs[k], leaseValue)
				if err != nil {
					b.Error(err)
					return
				}
				revs[k] = rev
			}
		})
	}
	wg.Wait()
	head, _ := s.CurrentRevision(ctx)
	b.ResetTimer()
	if err := s.Compact(ctx, head); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if got := logRevisions(b, s, 0, head); len(got) != keys {
		b.Fatalf("%d log records left after compacting at the newest revision, want %d", len(got), keys)
	}
}
