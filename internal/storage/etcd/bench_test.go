package etcd

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leasehold/leasehold/internal/storage/etcd/etcdtest"
)

// benchWriters is `bench max`'s 64 concurrent renewing clients.
const benchWriters = 64

// benchWarmUp swaps per writer before the clock starts, so neither mode pays
// for a cold connection or a cold etcd.
const benchWarmUp = 20

// casFunc swaps key from revision rev to value and returns the new revision.
type casFunc func(ctx context.Context, key string, rev int64) (int64, error)

// BenchmarkCAS measures the etcd target (docs/performance.md, "Measuring
// Leasehold on etcd"): compare-and-swap writes by 64
// goroutines, each renewing its own lease-sized key with the revision its
// previous write returned, as raw etcd transactions (If ModRevision==rev
// Then Put) and through the driver's Update. Each mode gets its own fresh
// etcd (with fsync, as in production) so history size and order do not
// favour either; on a shared machine run the two alternately several times:
//
//	go test -c -o etcd.test ./internal/storage/etcd/
//	for i in 1 2 3; do for m in raw driver; do ./etcd.test -test.run '^$' -test.bench "CAS/$m" -test.benchtime 30000x; done; done
//
// The driver must reach 80% of raw.
func BenchmarkCAS(b *testing.B) {
	value := bytes.Repeat([]byte("x"), 300) // about a node Lease in protobuf
	b.Run("raw-etcd-txn", func(b *testing.B) {
		s := newTestStore(b, etcdtest.Start(b, etcdtest.Options{Fsync: true}).Endpoint, "")
		runCAS(b, s, value, func(ctx context.Context, key string, rev int64) (int64, error) {
			ek, err := s.keys.toEtcd(key)
			if err != nil {
				return 0, err
			}
			resp, err := s.Client().Txn(ctx).
				If(clientv3.Compare(clientv3.ModRevision(ek), "=", rev)).
				Then(clientv3.OpPut(ek, string(value))).
				Commit()
			if err != nil {
				return 0, err
			}
			if !resp.Succeeded {
				return 0, fmt.Errorf("raw CAS on %s at %d failed", key, rev)
			}
			return resp.Header.Revision, nil
		})
	})
	b.Run("driver-update", func(b *testing.B) {
		s := newTestStore(b, etcdtest.Start(b, etcdtest.Options{Fsync: true}).Endpoint, "")
		runCAS(b, s, value, func(ctx context.Context, key string, rev int64) (int64, error) {
			return s.Update(ctx, key, rev, value)
		})
	})
}

// runCAS creates one key per writer, warms up, then shares b.N swaps among
// the writers.
func runCAS(b *testing.B, s *Store, value []byte, cas casFunc) {
	ctx := context.Background()
	keys := make([]string, benchWriters)
	revs := make([]int64, benchWriters)
	for i := range keys {
		keys[i] = fmt.Sprintf("/registry/bench/lease-%d", i)
		rev, err := s.Create(ctx, keys[i], value)
		if err != nil {
			b.Fatal(err)
		}
		revs[i] = rev
	}
	swap := func(ops int64) {
		var left atomic.Int64
		left.Store(ops)
		var failed atomic.Value
		var wg sync.WaitGroup
		for i := range benchWriters {
			wg.Go(func() {
				for left.Add(-1) >= 0 {
					next, err := cas(ctx, keys[i], revs[i])
					if err != nil {
						failed.Store(err)
						return
					}
					revs[i] = next
				}
			})
		}
		wg.Wait()
		if err, ok := failed.Load().(error); ok {
			b.Fatal(err)
		}
	}
	swap(benchWriters * benchWarmUp)
	b.ResetTimer()
	swap(int64(b.N))
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
}
