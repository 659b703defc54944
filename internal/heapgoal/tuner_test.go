package heapgoal

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"
)

func TestLimitFor(t *testing.T) {
	const mib = 1 << 20
	o := Options{Percent: 200, MemoryLimit: 900 * mib}
	for _, c := range []struct {
		live, overhead uint64
		want           int64
	}{
		{0, 0, 900 * mib},
		{400 * mib, 40 * mib, 900 * mib},  // 40 + 500 fits under the limit
		{688 * mib, 40 * mib, 900 * mib},  // 40 + 860: exactly the limit
		{800 * mib, 40 * mib, 1040 * mib}, // 40 + 1000: the floor
		{4096 * mib, 0, 5120 * mib},
	} {
		if got := o.LimitFor(c.live, c.overhead); got != c.want {
			t.Errorf("LimitFor(%d MiB live, %d MiB overhead) = %d MiB, want %d MiB", c.live/mib, c.overhead/mib, got/mib, c.want/mib)
		}
	}
	if got := (Options{Percent: 200}).LimitFor(100<<30, 0); got != math.MaxInt64 {
		t.Errorf("without a limit LimitFor = %d, want no limit", got)
	}
	if got := (Options{MemoryLimit: mib, MinPercent: 10}).LimitFor(100*mib, 0); got != 110*mib {
		t.Errorf("with MinPercent 10 LimitFor = %d MiB, want 110 MiB", got/mib)
	}
	if got := o.LimitFor(math.MaxUint64/2, math.MaxUint64/2); got != math.MaxInt64 {
		t.Errorf("LimitFor of an impossible heap = %d, want no limit", got)
	}
}

// countingHandler counts the tuner's debug lines.
type countingHandler struct{ n atomic.Int64 }

func (h *countingHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (h *countingHandler) Handle(context.Context, slog.Record) error { h.n.Add(1); return nil }
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler        { return h }
func (h *countingHandler) WithGroup(string) slog.Handler             { return h }

// restoreGC puts back the process's GC settings after a test.
func restoreGC(t *testing.T) {
	percent := debug.SetGCPercent(100)
	limit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
}

// runTuner runs a tuner with o until stop returns true after a collection
// (at most 10 s), and checks that it ends with its context.
func runTuner(t *testing.T, o Options, stop func() bool) {
	t.Helper()
	o.Interval = 5 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
		if stop() || time.Now().After(deadline) {
			break
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
}

// TestRunRaisesTheLimitAboveALargeLiveHeap holds 64 MiB live under a 16 MiB
// limit: after a collection the tuner must raise the limit to leave a
// quarter of the live heap above it, and keep GOGC.
func TestRunRaisesTheLimitAboveALargeLiveHeap(t *testing.T) {
	restoreGC(t)
	hold := make([]byte, 64<<20)
	for i := range hold {
		hold[i] = byte(i)
	}
	h := &countingHandler{}
	runTuner(t, Options{Percent: 200, MemoryLimit: 16 << 20, Log: slog.New(h)}, func() bool { return h.n.Load() > 0 })
	runtime.KeepAlive(hold)
	if got := debug.SetMemoryLimit(-1); got < 80<<20 {
		t.Fatalf("memory limit with 64 MiB live = %d MiB, want at least 80 MiB (live + 25%%)", got>>20)
	}
	if got := debug.SetGCPercent(100); got != 200 {
		t.Fatalf("GC percent = %d, want 200", got)
	}
}

// TestRunKeepsTheLimitAboveASmallHeap: with a limit far above the live heap
// the tuner sets it and leaves it.
func TestRunKeepsTheLimitAboveASmallHeap(t *testing.T) {
	restoreGC(t)
	n := 0
	runTuner(t, Options{Percent: 170, MemoryLimit: 1 << 40}, func() bool { n++; return n == 5 })
	if got := debug.SetMemoryLimit(-1); got != 1<<40 {
		t.Fatalf("memory limit = %d, want 1 TiB", got)
	}
	if got := debug.SetGCPercent(100); got != 170 {
		t.Fatalf("GC percent = %d, want 170", got)
	}
}

// TestRunWithoutALimitSetsNone: MemoryLimit 0 is GOGC alone.
func TestRunWithoutALimitSetsNone(t *testing.T) {
	restoreGC(t)
	debug.SetMemoryLimit(1 << 30)
	n := 0
	runTuner(t, Options{Percent: 200}, func() bool { n++; return n == 2 })
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("memory limit = %d, want none", got)
	}
}
