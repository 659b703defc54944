package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
)

// renewalKeys is the fleet BenchmarkRenewals100k renews: one Lease per node.
const renewalKeys = 100_000

// renewalWarmupPasses is how many times every key is renewed before the
// measurement starts: enough for the log to fill the history the compactor
// keeps (renewalHistory), so that the sweeps, memtable flushes and pebble
// compactions measured are those of a store in steady state.
const renewalWarmupPasses = 3

// renewalHistory is the history the benchmark's compactor keeps, in
// revisions. The server keeps 10 watch-cache windows (1,000,000 revisions)
// at most, 100 s of history at 10,000 renewals a second; three passes over
// the fleet keep the warm-up short while the log still outweighs the
// current states many times over, as it does there.
const renewalHistory = 3 * renewalKeys

// renewalOpPasses is how many passes over the fleet one op of
// BenchmarkRenewals100k is: two turnovers of the log.
const renewalOpPasses = 2 * renewalHistory / renewalKeys

// BenchmarkRenewals100k is the store's share of a server carrying 100,000
// nodes: 64 writers renew 100,000 Leases round-robin (each writer its own
// keys, so each Update carries the key's current revision), while the
// automatic compactor sweeps the log every second down to renewalHistory
// revisions. The values are protobuf-encoded coordination/v1 Leases as the
// server stores them (with an ownerReference and the kubelet's managed
// fields, about 500 B), a new renewTime each time.
//
// One op is renewalOpPasses passes over the fleet (600,000 renewals: the
// log turns over twice), after a warm-up (the creates and
// renewalWarmupPasses passes); the default -benchtime runs one, in about
// 30 s. The measurement starts and ends with no flush or compaction
// running, so it holds whole ones; the debt pebble leaves at the end is
// not in it, as the debt left by the warm-up is, which is why the op is
// this long: over a single turnover, settings that defer compactions
// looked better than they are.
//
// cpu-µs/write is the process's CPU time (user and system, all
// goroutines: the writers, the committer, the compactor, pebble's flushes
// and compactions) per renewal during the measured passes; it includes
// encoding the Lease (enc-µs/write), which no store setting changes. The
// pebble figures are the measured passes' too: wal-B/write, flush-B/write
// and compact-B/write are the bytes pebble's WAL, flushes and compactions
// wrote per renewal, wamp their sum over the WAL's (pebble's write
// amplification), disk-MB the store's size at the end; get-µs is what a
// Get of a random key takes afterwards.
//
// Run it alone on one core, e.g.
//
//	taskset -c 1 go test -run '^$' -bench Renewals100k -count 3 ./internal/storage/embedded/
func BenchmarkRenewals100k(b *testing.B) {
	ctx := context.Background()
	leases := newLeaseEncoder()
	// Measured before the store exists, so that no pebble work counts.
	encCost := leases.cost(b)
	s := openTest(b, Options{Compaction: CompactionPolicy{Interval: time.Second, KeepRevisions: renewalHistory}})
	revs := make([]int64, renewalKeys)
	keys := make([]string, renewalKeys)
	for k := range keys {
		keys[k] = fmt.Sprintf("/registry/leases/kube-node-lease/node-%06d", k)
	}
	renewAll := func() {
		var wg sync.WaitGroup
		for w := range benchWriters {
			wg.Go(func() {
				for k := w; k < renewalKeys; k += benchWriters {
					value, err := leases.encode(k, time.Now())
					if err == nil {
						if revs[k] == 0 {
							revs[k], err = s.Create(ctx, keys[k], value)
						} else {
							revs[k], err = s.Update(ctx, keys[k], revs[k], value)
						}
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if b.Failed() {
			b.FailNow()
		}
	}
	for range 1 + renewalWarmupPasses {
		renewAll()
	}

	quiesce(b, s)
	before, beforeCPU := s.db.Metrics(), cpuTime(b)
	b.ResetTimer()
	for range b.N * renewalOpPasses {
		renewAll()
	}
	quiesce(b, s)
	b.StopTimer()
	after, afterCPU := s.db.Metrics(), cpuTime(b)

	writes := float64(b.N * renewalOpPasses * renewalKeys)
	b.ReportMetric(float64((afterCPU-beforeCPU).Microseconds())/writes, "cpu-µs/write")
	b.ReportMetric(float64(encCost.Nanoseconds())/1e3, "enc-µs/write")
	wal := float64(after.WAL.BytesWritten - before.WAL.BytesWritten)
	var flushed, compacted float64
	for l := range after.Levels {
		a, p := &after.Levels[l], &before.Levels[l]
		flushed += float64(a.TableBytesFlushed + a.BlobBytesFlushed - p.TableBytesFlushed - p.BlobBytesFlushed)
		compacted += float64(a.TableBytesCompacted + a.BlobBytesCompacted - p.TableBytesCompacted - p.BlobBytesCompacted)
	}
	b.ReportMetric(wal/writes, "wal-B/write")
	b.ReportMetric(flushed/writes, "flush-B/write")
	b.ReportMetric(compacted/writes, "compact-B/write")
	// Pebble's write amplification: what reached the disk over what was
	// written (the WAL).
	b.ReportMetric((wal+flushed+compacted)/wal, "wamp")
	b.ReportMetric(float64(after.DiskSpaceUsage())/(1<<20), "disk-MB")
	b.ReportMetric(getCost(b, s, keys).Seconds()*1e6, "get-µs")
	if done, head := s.compacted.Load(), s.rev.Load(); done == 0 || head-done > 2*renewalHistory {
		b.Fatalf("compacted at %d with the head at %d: the compactor did not keep up", done, head)
	}
	b.Logf("pebble after the measured passes:\n%s", after)
}

// getCost is the time a Get of a random key takes once the renewals are
// over: the read side of what the LSM's shape costs.
func getCost(b *testing.B, s *Store, keys []string) time.Duration {
	const n = 20_000
	rnd := rand.New(rand.NewPCG(1, 2))
	start := time.Now()
	for range n {
		if _, err := s.Get(context.Background(), keys[rnd.IntN(len(keys))]); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start) / n
}

// quiesce waits until pebble runs no flush and no compaction.
func quiesce(b *testing.B, s *Store) {
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		m := s.db.Metrics()
		if m.Flush.NumInProgress == 0 && m.Compact.NumInProgress == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("pebble still runs %d flushes and %d compactions after a minute", m.Flush.NumInProgress, m.Compact.NumInProgress)
		}
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// leaseEncoder encodes the Leases of BenchmarkRenewals100k in the stored
// form (Kubernetes' protobuf envelope), as a kubelet's renewal leaves them.
type leaseEncoder struct {
	enc runtime.Encoder
}

func newLeaseEncoder() *leaseEncoder {
	scheme := runtime.NewScheme()
	if err := coordinationv1.AddToScheme(scheme); err != nil {
		panic(fmt.Sprintf("register coordination/v1: %v", err))
	}
	return &leaseEncoder{enc: protobuf.NewSerializer(scheme, scheme)}
}

// encode returns node k's Lease renewed at renew. Its uids are random but
// fixed per node, like a real node's. It formats without fmt: this is the
// benchmark's own work, which should not drown what it measures.
func (e *leaseEncoder) encode(k int, renew time.Time) ([]byte, error) {
	rnd := rand.New(rand.NewPCG(uint64(k), 0x1ea5e))
	name := "node-" + zeroPad6(k)
	created := metav1.NewTime(time.Unix(1_700_000_000+int64(rnd.IntN(1_000_000)), 0))
	leaseUID, nodeUID := randomUID(rnd), randomUID(rnd)
	renewTime := metav1.NewMicroTime(renew)
	duration := int32(40)
	fields := string(append(append([]byte(`{"f:metadata":{"f:ownerReferences":{".":{},"k:{\"uid\":\"`), nodeUID...),
		`\"}":{}}},"f:spec":{"f:holderIdentity":{},"f:leaseDurationSeconds":{},"f:renewTime":{}}}`...))
	lease := &coordinationv1.Lease{
		TypeMeta: metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "kube-node-lease", UID: leaseUID, CreationTimestamp: created,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: nodeUID}},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "coordination.k8s.io/v1",
				Time: &metav1.Time{Time: renew.Truncate(time.Second)}, FieldsType: "FieldsV1",
				FieldsV1: metav1.NewFieldsV1(fields),
			}},
		},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &name, LeaseDurationSeconds: &duration, RenewTime: &renewTime},
	}
	var buf bytes.Buffer
	buf.Grow(640)
	if err := e.enc.Encode(lease, &buf); err != nil {
		return nil, fmt.Errorf("encode lease %s: %w", name, err)
	}
	return buf.Bytes(), nil
}

// zeroPad6 formats k in six digits at least.
func zeroPad6(k int) string {
	s := strconv.Itoa(k)
	if len(s) < 6 {
		s = "000000"[len(s):] + s
	}
	return s
}

// randomUID is a random version-4-looking UUID drawn from rnd.
func randomUID(rnd *rand.Rand) types.UID {
	var raw [16]byte
	binary.LittleEndian.PutUint64(raw[:8], rnd.Uint64())
	binary.LittleEndian.PutUint64(raw[8:], rnd.Uint64())
	var out [36]byte
	hex.Encode(out[0:8], raw[0:4])
	hex.Encode(out[9:13], raw[4:6])
	hex.Encode(out[14:18], raw[6:8])
	hex.Encode(out[19:23], raw[8:10])
	hex.Encode(out[24:36], raw[10:16])
	out[8], out[13], out[18], out[23] = '-', '-', '-', '-'
	return types.UID(out[:])
}

// cost is the CPU time one encode takes, measured on this goroutine, and
// checks that the values are the size the benchmark claims.
func (e *leaseEncoder) cost(b *testing.B) time.Duration {
	const n = 10_000
	start := cpuTime(b)
	var size int
	for k := range n {
		v, err := e.encode(k, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		size += len(v)
	}
	if avg := size / n; avg < 400 || avg > 700 {
		b.Fatalf("encoded Leases average %d B, want 400-700 B", avg)
	}
	return (cpuTime(b) - start) / n
}
