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

// serveMaxHeapHeadroom is --max-heap-headroom's default: the most the heap
// may grow above its live data before the next collection (see package
// heapgoal). GOGC=200 alone let a 100,000-node server (about 380 MB live,
// up to 570 MB while the fleet registers, when the watch cache's window
// still holds every new Node decoded) reach 1.6-1.9 GiB of RSS. RSS is
// about 1.13x the heap (fragmentation) plus 90 MB (the mapped binary, GC
// and span metadata), so staying under 1 GiB through registration leaves
// about 300 MB above the live peak: measured on the same loaded machine,
// 384Mi peaked at 1,037 MiB RSS and 256Mi at 826 MiB. Below 128 MB of live
// heap (about 30,000 nodes) the cap does not bind and GOGC=200 holds.
const serveMaxHeapHeadroom = "256Mi"

// benchGCPercent is bench's GC target when GOGC is not set. The load
// generator shares the machine with the server in every local measurement,
// so its collector's CPU is taken from the server being measured. Its live
// heap is the cached lease of every simulated node; at Go's default a
// 100,000-lease bench rate spent about a third of its CPU profile in the
// collector, and at 400 the generator used 12% less CPU over the same
// 60 s run (55.0 -> 48.2 CPU-s) for a peak RSS of 785 instead of 343 MiB.
const benchGCPercent = 400

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

// startServeGC applies serve's collector policy: GOGC from the environment
// if the operator set it (then nothing is tuned), else GOGC=200 capped at
// headroom bytes above the live heap by a heapgoal tuner that runs until
// ctx ends. The returned function waits for the tuner to stop.
func startServeGC(ctx context.Context, log *slog.Logger, headroom string) (wait func(), err error) {
	q, err := resource.ParseQuantity(headroom)
	if err != nil {
		return nil, fmt.Errorf("--max-heap-headroom %q: %w", headroom, err)
	}
	if q.Sign() < 0 {
		return nil, fmt.Errorf("--max-heap-headroom %q: must not be negative", headroom)
	}
	if v, ok := os.LookupEnv("GOGC"); ok {
		log.Info("garbage collector target from the environment", "GOGC", v)
		return func() {}, nil
	}
	opts := heapgoal.Options{Percent: serveGCPercent, MaxHeadroom: q.Value(), Log: log}
	log.Info("garbage collector target", "GOGC", serveGCPercent, "maxHeapHeadroomBytes", opts.MaxHeadroom)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = heapgoal.Run(ctx, opts) // ends with ctx, its only error
	}()
	return func() { <-done }, nil
}
