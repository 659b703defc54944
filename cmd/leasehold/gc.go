package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/leasehold/leasehold/internal/heapgoal"
)

// serveGCPercent is the garbage collector's target for serve when GOGC is
// not set. The server's live heap is mostly the watch cache (a window of
// recent objects) and the store's index, and every request allocates
// short-lived garbage against it. In CPU profiles of leasehold bench max the
// GC's mark workers fell from 7.3% of the server's samples at Go's default of
// 100 to 4.4% at 200; the price is about one more live heap of memory (peak
// RSS about 300 -> 420 MiB there). Whole-run throughput and CPU per renewal
// vary by more than that from run to run on a shared 2-core VM, so the gain
// is read from the profiles, not from those totals.
const serveGCPercent = 200

// serveMemoryLimit is --memory-limit's default: the soft limit on the Go
// runtime's memory (see package heapgoal), raised by the tuner whenever the
// live heap would leave less than a quarter of itself above it. RSS is the
// runtime's memory plus about 100 MB (the mapped binary): a 100,000-node
// server peaked at 970-999 MiB RSS under 900Mi, too near 1 GiB, so the
// default leaves 50 MiB more. At 400 MB of live heap the limit still leaves
// the heap about 380 MB to grow into, so the collector runs less often than
// with the previous fixed 256 MiB above the live heap (-19% CPU per
// renewal at 900Mi, measured; see heapgoal). A fleet whose live heap
// outgrows the limit gets more memory, not a collector running back to
// back. Below about 260 MB of live heap (some 65,000 nodes) GOGC=200 reaches
// its goal first and the limit does not bind.
const serveMemoryLimit = "850Mi"

// benchGCPercent is bench's GC target when GOGC is not set. The load
// generator shares the machine with the server in every local measurement,
// so its collector's CPU is taken from the server being measured, and its
// collections show in the latency it measures: on the one core
// scripts/bench-rate.sh pins it to, each cycle's mark assists hold the
// goroutines that send renewals and read answers. At Go's default a
// 100,000-lease bench rate spent about a third of its CPU profile in the
// collector; 400 cut its CPU by 12% (55.0 -> 48.2 CPU-s over 60 s). At
// 400, `bench rate` of 60,000 nodes against `bench baseline` (a server
// answering in well under a millisecond) collected every 5 s, and each
// collection made its second's p99 54-98 ms against 2-4 ms for the others:
// the run's p99 was 22.6 ms. At 1600 it collected once in 40 s and the
// run's p99 was 8.8 ms, for a peak RSS of 787 instead of 301 MiB (leases
// parked as bytes, lean_parked.go; live heap 41 MB).
const benchGCPercent = 1600

// applyGCDefaults sets the GC target to percent unless the operator chose
// one through GOGC, and logs the setting in effect.
func applyGCDefaults(log *slog.Logger, percent int) {
	if v, ok := os.LookupEnv("GOGC"); ok {
		log.Info("garbage collector target from the environment", "GOGC", v)
		return
	}
	debug.SetGCPercent(percent)
	log.Info("garbage collector target", "GOGC", percent)
}

// startServeGC applies serve's collector policy: nothing if the operator
// set GOGC or GOMEMLIMIT (their choice stands), else GOGC=200 under a soft
// memory limit of limit bytes that a heapgoal tuner keeps above the live
// heap until ctx ends. The returned function waits for the tuner to stop.
func startServeGC(ctx context.Context, log *slog.Logger, limit string) (wait func(), err error) {
	q, err := resource.ParseQuantity(limit)
	if err != nil {
		return nil, fmt.Errorf("--memory-limit %q: %w", limit, err)
	}
	if q.Sign() < 0 {
		return nil, fmt.Errorf("--memory-limit %q: must not be negative", limit)
	}
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		if v, ok := os.LookupEnv(env); ok {
			log.Info("garbage collector settings from the environment", env, v)
			return func() {}, nil
		}
	}
	opts := heapgoal.Options{Percent: serveGCPercent, MemoryLimit: q.Value(), Log: log}
	log.Info("garbage collector target", "GOGC", serveGCPercent, "memoryLimitBytes", opts.MemoryLimit)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = heapgoal.Run(ctx, opts) // ends with ctx, its only error
	}()
	return func() { <-done }, nil
}
