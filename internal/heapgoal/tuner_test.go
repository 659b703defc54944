package heapgoal

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"
)

func TestPercentFor(t *testing.T) {
	const mib = 1 << 20
	o := Options{Percent: 200, MaxHeadroom: 384 * mib}
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 200},
		{10 * mib, 200},
		{192 * mib, 200}, // 2×192 MiB is exactly the cap
		{193 * mib, 198},
		{384 * mib, 100},
		{768 * mib, 50},
		{1536 * mib, 25},
		{100 << 30, 25}, // the floor
	} {
		if got := o.PercentFor(c.live); got != c.want {
			t.Errorf("PercentFor(%d MiB) = %d, want %d", c.live/mib, got, c.want)
		}
	}
	if got := (Options{Percent: 200}).PercentFor(100 << 30); got != 200 {
		t.Errorf("without a cap PercentFor = %d, want 200", got)
	}
	if got := (Options{Percent: 200, MaxHeadroom: mib, MinPercent: 10}).PercentFor(100 * mib); got != 10 {
		t.Errorf("with MinPercent 10 PercentFor = %d, want 10", got)
	}
}

// countingHandler counts the tuner's debug lines.
type countingHandler struct{ n atomic.Int64 }

func (h *countingHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (h *countingHandler) Handle(context.Context, slog.Record) error { h.n.Add(1); return nil }
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler        { return h }
func (h *countingHandler) WithGroup(string) slog.Handler             { return h }

// TestRunLowersPercentForALargeLiveHeap holds 64 MiB live with a 16 MiB
// cap: after a collection the tuner must set the floor, 25.
func TestRunLowersPercentForALargeLiveHeap(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)

	hold := make([]byte, 64<<20)
	for i := range hold {
		hold[i] = byte(i)
	}
	h := &countingHandler{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Percent: 200, MaxHeadroom: 16 << 20, Interval: 5 * time.Millisecond, Log: slog.New(h)})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for h.n.Load() == 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
	runtime.KeepAlive(hold)
	if got := debug.SetGCPercent(old); got != 25 {
		t.Fatalf("GC percent after a collection of a 64 MiB live heap = %d, want 25 (the floor)", got)
	}
}

// TestRunKeepsPercentForASmallHeap: with a cap far above the live heap the
// tuner sets Percent and leaves it.
func TestRunKeepsPercentForASmallHeap(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, Options{Percent: 170, MaxHeadroom: 1 << 40, Interval: 5 * time.Millisecond}) }()
	for range 5 {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	if got := debug.SetGCPercent(old); got != 170 {
		t.Fatalf("GC percent = %d, want 170", got)
	}
}
