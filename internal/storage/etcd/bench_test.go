package etcd

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/storage/etcd/etcdtest"
	"github.com/leasehold/leasehold/internal/testdeps"
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

// BenchmarkReplicaWrite measures the driver's own CPU per renewal as a
// `serve` replica spends it, apart from etcd's: etcd runs as 3 Debian
// etcd-server processes (apt-get install etcd-server; skipped without it),
// so this process's CPU (cpu-µs/op, from getrusage) is the driver's, the
// gRPC client's and its watch's. Each write is an Update, as
// objects.Store renews a lease, made on a fresh goroutine about 3 KB of
// stack deep, as the HTTP/2 server runs each API request, and a watch of
// the keys without previous values and with progress notifications (the
// watch cache's) takes every batch of events. On a shared machine compare
// two commits alternately:
//
//	go test -c -o /tmp/etcd.test ./internal/storage/etcd/
//	/tmp/etcd.test -test.run '^$' -test.bench ReplicaWrite -test.benchtime 20000x -test.count 3
func BenchmarkReplicaWrite(b *testing.B) {
	bin := testdeps.Debian(b, "etcd-server", "etcd")
	members, _ := startDebianCluster(b, bin, 3)
	s := newTestStoreOn(b, members, "")
	ctx, cancel := context.WithCancel(context.Background())
	events, err := s.Watch(ctx, "/registry/bench/", 0, storage.WithoutPrevValue, storage.WithProgressNotify)
	if err != nil {
		b.Fatal(err)
	}
	var received atomic.Int64
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for batch := range events {
			for _, ev := range batch {
				if ev.Type == storage.EventPut {
					received.Add(1)
				}
			}
		}
	}()
	b.Cleanup(func() {
		cancel()
		<-drained
	})
	var writes atomic.Int64
	runCAS(b, s, bytes.Repeat([]byte("x"), 300), func(ctx context.Context, key string, rev int64) (next int64, err error) {
		// A renewal's value differs from the previous one (its renewTime).
		value := fmt.Appendf(bytes.Repeat([]byte("x"), 280), "%020d", writes.Add(1))
		done := make(chan struct{})
		go func() {
			defer close(done)
			withStackInUse(3, func() { next, err = s.Update(ctx, key, rev, value) })
		}()
		<-done
		return next, err
	})
	// The watch takes every write (the keys' creation included) before
	// the next run.
	want := writes.Load() + benchWriters
	for deadline := time.Now().Add(10 * time.Second); received.Load() < want && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if received.Load() < want {
		b.Fatalf("the watch received %d events for %d writes", received.Load(), want)
	}
}

// withStackInUse calls f with about kb KB of the goroutine's stack in use
// by its callers, as an API request's handler has when it reaches storage.
//
//go:noinline
func withStackInUse(kb int, f func()) {
	var pad [1000]byte
	if kb <= 0 {
		f()
		return
	}
	pad[kb%len(pad)] = byte(kb)
	withStackInUse(kb-1-int(pad[0]), f) // pad[0] is 0: the frame stays
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
	cpu0 := processCPU(b)
	b.ResetTimer()
	swap(int64(b.N))
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
	b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
