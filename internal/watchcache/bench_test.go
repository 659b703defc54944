package watchcache

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/storage"
)

// loadedCache returns a cache holding n leases spread over namespaces of 1,000,
// loaded as a first list would, without a store behind it: the benchmarks
// measure the cache alone, not storage or decoding.
func loadedCache(b *testing.B, n int, opts Options) (*Cache, []decodedKV) {
	b.Helper()
	opts.Prefix = "/registry/"
	opts.Decode = decodeLease
	opts.Logger = quietLogger()
	c := New(nil, opts)
	kvs := make([]decodedKV, n)
	for i := range n {
		ns, name := fmt.Sprintf("ns%03d", i/1000), fmt.Sprintf("node-%06d", i)
		holder := name
		kvs[i] = decodedKV{
			key: leaseKey(ns, name),
			obj: &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: fmt.Sprint(i + 1)},
				Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
			},
			modRev: int64(i + 1),
		}
	}
	c.replace(kvs, int64(n))
	close(c.ready)
	return c, kvs
}

// BenchmarkFanout applies lease renewals to the cache in storage-sized batches
// while 100 watchers of all leases drain their channels; one op is one event
// delivered to all 100. The target is 5,000 events/s to 100 watchers.
func BenchmarkFanout(b *testing.B) {
	const watchers, batchSize, leases = 100, 100, 10_000
	c, kvs := loadedCache(b, leases, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var delivered atomic.Int64 // events received, summed over watchers
	var slowest atomic.Int64   // revision every watcher has reached (approximate)
	var wg sync.WaitGroup
	target := int64(leases + b.N)
	progress := make([]atomic.Int64, watchers)
	for i := range watchers {
		w, err := c.Watch(ctx, WatchOptions{})
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.Stop()
			for ev := range w.Events() {
				delivered.Add(1)
				progress[i].Store(ev.Rev)
				if ev.Rev == target {
					return
				}
			}
			b.Errorf("watcher %d closed before the last event", i)
		}()
	}
	minProgress := func() int64 {
		m := target
		for i := range progress {
			m = min(m, progress[i].Load())
		}
		return m
	}

	batch := make([]decoded, 0, batchSize)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	rev := int64(leases)
	for rev < target {
		batch = batch[:0]
		for len(batch) < batchSize && rev < target {
			rev++
			kv := kvs[rev%leases]
			batch = append(batch, decoded{
				ev:  storage.Event{Type: storage.EventPut, Key: kv.key, Revision: rev},
				obj: kv.obj,
			})
		}
		c.applyBatch(batch)
		// Stay well inside the window so no watcher is closed as too slow:
		// this measures sustained throughput, not a burst.
		for rev-slowest.Load() > DefaultWindow/2 {
			slowest.Store(minProgress())
			runtime.Gosched()
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if got := delivered.Load(); got != int64(watchers)*int64(b.N) {
		b.Fatalf("delivered %d events, want %d", got, int64(watchers)*int64(b.N))
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(b.N)*watchers/elapsed.Seconds(), "deliveries/s")
}

// BenchmarkList lists from a cache of 100,000 leases: all of them, and one
// namespace of 1,000 (which must cost O(matching), not O(cache)); then the
// same with every entry cold, each decoded for the call (the tests' JSON
// codec, so the figures are relative).
func BenchmarkList(b *testing.B) {
	c, _ := loadedCache(b, 100_000, Options{Encode: encodeJSON})
	b.Run("hot", func(b *testing.B) { benchmarkList(b, c) })
	var scratch []byte
	if n := c.freezeUpTo(context.Background(), c.Revision(), nil, &scratch); n != 100_000 {
		b.Fatalf("froze %d entries, want 100000", n)
	}
	b.Run("cold", func(b *testing.B) { benchmarkList(b, c) })
}

func benchmarkList(b *testing.B, c *Cache) {
	for _, bc := range []struct {
		name   string
		prefix string
		pred   func(k8sruntime.Object) bool
		want   int
	}{
		{"all-100k", leasePrefix, nil, 100_000},
		{"namespace-1k", leasePrefix + "ns042/", nil, 1000},
		{"predicate-1-of-100k", leasePrefix, func(o k8sruntime.Object) bool {
			return holderOf(o) == "node-050000"
		}, 1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				objs, _ := c.List(bc.prefix, bc.pred)
				if len(objs) != bc.want {
					b.Fatalf("List = %d objects, want %d", len(objs), bc.want)
				}
			}
		})
	}
}
