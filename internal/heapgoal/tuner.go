package heapgoal

import (
	"context"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Options configures a tuner.
type Options struct {
	// Percent is the GC percent while the heap is small (GOGC).
	Percent int
	// MinPercent is the lowest GC percent the tuner sets (DefaultMinPercent
	// if 0).
	MinPercent int
	// MaxHeadroom caps the bytes the heap may grow above the live heap
	// before the next collection; 0 or less leaves Percent alone.
	MaxHeadroom int64
	// Interval is how often the tuner looks for a finished collection
	// (DefaultInterval if 0).
	Interval time.Duration
	// Log, if set, receives a debug line on each change of percent.
	Log *slog.Logger
}

const (
	// DefaultMinPercent keeps at least a quarter of the live heap as
	// headroom: below that the collector would run nearly back to back
	// on a large heap.
	DefaultMinPercent = 25
	// DefaultInterval: collections of a large heap are seconds apart, so
	// a look every quarter second sets each cycle's percent early in it.
	DefaultInterval = 250 * time.Millisecond
)

// PercentFor is the GC percent the tuner sets for a live heap of live bytes.
func (o Options) PercentFor(live uint64) int {
	if o.MaxHeadroom <= 0 || live == 0 {
		return o.Percent
	}
	minPercent := o.MinPercent
	if minPercent == 0 {
		minPercent = DefaultMinPercent
	}
	// Compare in bytes first: live×Percent/100 overflows for no heap a
	// process can hold, and the division below then needs no clamping.
	if live*uint64(o.Percent)/100 <= uint64(o.MaxHeadroom) {
		return o.Percent
	}
	p := int(uint64(o.MaxHeadroom) * 100 / live)
	return max(p, minPercent)
}

// sample names the two runtime metrics the tuner reads.
const (
	metricCycles = "/gc/cycles/total:gc-cycles"
	metricLive   = "/gc/heap/live:bytes"
)

// Run sets the process's GC percent to o.Percent and then, after every
// collection, to o.PercentFor(live heap), until ctx ends. It returns
// ctx's error.
func Run(ctx context.Context, o Options) error {
	interval := o.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	current := o.Percent
	debug.SetGCPercent(current)
	samples := []metrics.Sample{{Name: metricCycles}, {Name: metricLive}}
	metrics.Read(samples)
	for _, s := range samples {
		if s.Value.Kind() != metrics.KindUint64 {
			// A runtime without the metric: GOGC stays at Percent.
			if o.Log != nil {
				o.Log.Warn("garbage collector target stays fixed: runtime metric unavailable", "metric", s.Name, "GOGC", current)
			}
			<-ctx.Done()
			return ctx.Err()
		}
	}
	var seen uint64
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		metrics.Read(samples)
		cycles, live := samples[0].Value.Uint64(), samples[1].Value.Uint64()
		if cycles == seen {
			continue
		}
		seen = cycles
		if p := o.PercentFor(live); p != current {
			debug.SetGCPercent(p)
			if o.Log != nil {
				o.Log.Debug("garbage collector target", "GOGC", p, "liveHeapBytes", live)
			}
			current = p
		}
	}
}
