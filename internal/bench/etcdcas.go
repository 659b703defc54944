package bench

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// EtcdCASWorkload is the etcd driver's yardstick (docs/performance.md,
// "Measuring Leasehold on etcd"): the raw
// compare-and-put transactions (If ModRevision==rev Then Put) a renewal
// becomes in etcd, sent straight to the cluster with the same number of
// clients and keys as `bench max`, so that `bench max` through a server on
// that cluster can be read as a fraction of it. Client c owns keys c, c+C,
// c+2C, ... and swaps them in turn with the revision its previous swap
// returned, exactly as max mode renews its leases.
//
// With Config.Interval set it is paced instead, as rate mode is: every key
// is swapped once per interval, the keys' turns spread evenly over it and
// carried out by whichever client is free. etcd's CPU per transaction
// depends on how many arrive together (its raft and WAL batches grow with
// the load), so it compares with a server only at the same throughput.
type EtcdCASWorkload struct {
	cfg    Config
	client *clientv3.Client
	value  []byte
	prefix string
	revs   []int64
	// busy marks a key whose paced swap is in flight: its next turn, if due
	// meanwhile, is skipped as an overrun, as rate mode skips a node's.
	busy []atomic.Bool
}

// NewEtcdCASWorkload checks cfg (Clients, Leases, Duration) for the
// workload; client is the etcd client to measure through (the caller
// closes it), valueSize the bytes written per swap (a stored renewed Lease
// is about 350).
func NewEtcdCASWorkload(cfg Config, client *clientv3.Client, valueSize int) (*EtcdCASWorkload, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validateCommon(); err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	if cfg.Interval < 0 {
		return nil, fmt.Errorf("invalid configuration: negative interval %v", cfg.Interval)
	}
	if cfg.Leases < cfg.Clients || valueSize <= 0 {
		return nil, fmt.Errorf("invalid configuration: need at least one key per client (got %d keys for %d clients) and a positive value size (got %d)", cfg.Leases, cfg.Clients, valueSize)
	}
	return &EtcdCASWorkload{
		cfg: cfg, client: client, value: bytes.Repeat([]byte("x"), valueSize),
		// Beside Leasehold's keys (/registry/...), never among them, so a
		// server sharing the cluster does not watch or cache them.
		prefix: "/leasehold-bench/etcd-cas/" + cfg.Namespace + "/",
	}, nil
}

// Name implements Workload.
func (w *EtcdCASWorkload) Name() string {
	if w.cfg.Interval > 0 {
		return fmt.Sprintf("etcd-cas: %d keys of %d bytes every %v (%.0f/s) with %d clients",
			w.cfg.Leases, len(w.value), w.cfg.Interval, float64(w.cfg.Leases)/w.cfg.Interval.Seconds(), w.cfg.Clients)
	}
	return fmt.Sprintf("etcd-cas: %d clients over %d keys of %d bytes", w.cfg.Clients, w.cfg.Leases, len(w.value))
}

func (w *EtcdCASWorkload) key(i int) string { return fmt.Sprintf("%s%06d", w.prefix, i) }

// Setup implements Workload: it writes every key once and keeps its revision.
func (w *EtcdCASWorkload) Setup(ctx context.Context) error {
	w.revs = make([]int64, w.cfg.Leases)
	w.busy = make([]atomic.Bool, w.cfg.Leases)
	for i := range w.revs {
		resp, err := w.client.Put(ctx, w.key(i), string(w.value))
		if err != nil {
			return fmt.Errorf("writing %s: %w", w.key(i), err)
		}
		w.revs[i] = resp.Header.Revision
	}
	return nil
}

// Run implements Workload.
func (w *EtcdCASWorkload) Run(ctx context.Context, stop <-chan struct{}, rec *Recorder) error {
	if len(w.revs) == 0 {
		return fmt.Errorf("etcd-cas workload run before its setup")
	}
	if w.cfg.Interval > 0 {
		w.runPaced(ctx, stop, rec)
		return nil
	}
	var wg sync.WaitGroup
	for c := range w.cfg.Clients {
		wg.Go(func() {
			for i := c; ; i += w.cfg.Clients {
				if i >= len(w.revs) {
					i = c
				}
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				w.swap(ctx, i, rec)
			}
		})
	}
	wg.Wait()
	return nil
}

// runPaced swaps every key once per cfg.Interval until stop or ctx. A
// swap reads and writes revs[i] only while it holds busy[i] (runEvenly).
func (w *EtcdCASWorkload) runPaced(ctx context.Context, stop <-chan struct{}, rec *Recorder) {
	runEvenly(ctx, stop, rec, len(w.revs), w.cfg.Interval, w.cfg.Clients,
		func(i int) *atomic.Bool { return &w.busy[i] },
		func(_, i int) { w.swap(ctx, i, rec) })
}

// swap sends one compare-and-put of key i and records it. A failed compare
// (another writer changed the key) reads the key's revision again, as a
// renewing client re-reads its lease after a conflict.
func (w *EtcdCASWorkload) swap(ctx context.Context, i int, rec *Recorder) {
	key := w.key(i)
	rctx, cancel := context.WithTimeout(ctx, w.cfg.RequestTimeout)
	defer cancel()
	start := time.Now()
	resp, err := w.client.Txn(rctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", w.revs[i])).
		Then(clientv3.OpPut(key, string(w.value))).
		Else(clientv3.OpGet(key, clientv3.WithCountOnly())).
		Commit()
	switch {
	case err != nil:
		if rec.Failure("etcd") {
			w.cfg.Logger.Warn("etcd compare-and-put failed", "key", key, "err", err)
		}
	case !resp.Succeeded:
		rec.Failure("conflict")
		if g, err := w.client.Get(rctx, key); err == nil && len(g.Kvs) == 1 {
			w.revs[i] = g.Kvs[0].ModRevision
		}
	default:
		rec.Success(time.Since(start))
		w.revs[i] = resp.Header.Revision
	}
}
