package heapgoal

import (
	"context"
	"log/slog"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Options configures a tuner.
type Options struct {
	// Percent is the GC percent (GOGC) the tuner sets and keeps.
	Percent int
	// MemoryLimit is the soft limit on the runtime's memory (as
	// GOMEMLIMIT) while the live heap leaves room under it; 0 or less sets
	// no limit: GOGC=Percent alone.
	MemoryLimit int64
	// MinPercent is the headroom, in percent of the live heap, that the
	// limit always leaves above it (DefaultMinPercent if 0).
	MinPercent int
	// Interval is how often the tuner looks for a finished collection
	// (DefaultInterval if 0).
	Interval time.Duration
	// Log, if set, receives a debug line on each change of the limit.
	Log *slog.Logger
}

const (
	// DefaultMinPercent keeps at least a quarter of the live heap as
	// headroom: below that the collector would run nearly back to back
	// on a large heap.
	DefaultMinPercent = 25
	// DefaultInterval: collections of a large heap are seconds apart, so
	// a look every quarter second sets each cycle's limit early in it.
	DefaultInterval = 250 * time.Millisecond
)

// LimitFor is the memory limit the tuner sets for a live heap of live bytes
// when the runtime holds overhead bytes that are not heap.
func (o Options) LimitFor(live, overhead uint64) int64 {
	if o.MemoryLimit <= 0 {
		return math.MaxInt64
	}
	minPercent := o.MinPercent
	if minPercent == 0 {
		minPercent = DefaultMinPercent
	}
	// No process holds a petabyte: the bounds only keep the sum below
	// from overflowing.
	const most = 1 << 50
	minPercent = min(minPercent, 1000)
	if live > most || overhead > most {
		return math.MaxInt64
	}
	floor := overhead + live + live*uint64(minPercent)/100
	return max(o.MemoryLimit, int64(floor))
}

// newSamples returns the runtime metrics the tuner reads, in the order read
// expects: collections, the live heap, and what overhead is made of
// (everything the runtime holds minus the heap's own classes).
func newSamples() []metrics.Sample {
	names := [...]string{
		"/gc/cycles/total:gc-cycles",
		"/gc/heap/live:bytes",
		"/memory/classes/total:bytes",
		"/memory/classes/heap/objects:bytes",
		"/memory/classes/heap/unused:bytes",
		"/memory/classes/heap/free:bytes",
		"/memory/classes/heap/released:bytes",
	}
	samples := make([]metrics.Sample, len(names))
	for i, name := range names {
		samples[i].Name = name
	}
	return samples
}

// reading is one read of the samples.
type reading struct{ cycles, live, overhead uint64 }

func read(samples []metrics.Sample) (reading, bool) {
	metrics.Read(samples)
	var v [7]uint64
	for i, s := range samples {
		if s.Value.Kind() != metrics.KindUint64 {
			return reading{}, false
		}
		v[i] = s.Value.Uint64()
	}
	heap := v[3] + v[4] + v[5] + v[6]
	r := reading{cycles: v[0], live: v[1]}
	if v[2] > heap {
		r.overhead = v[2] - heap
	}
	return r, true
}

// Run sets the process's GC percent to o.Percent and its memory limit to
// o.MemoryLimit and then, after every collection, the limit to
// o.LimitFor(live heap, overhead), until ctx ends. It returns ctx's error.
func Run(ctx context.Context, o Options) error {
	interval := o.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	debug.SetGCPercent(o.Percent)
	samples := newSamples()
	r, ok := read(samples)
	current := o.LimitFor(0, 0)
	debug.SetMemoryLimit(current)
	if !ok || o.MemoryLimit <= 0 {
		if !ok && o.Log != nil {
			o.Log.Warn("memory limit stays fixed: runtime metrics unavailable", "limitBytes", current)
		}
		<-ctx.Done()
		return ctx.Err()
	}
	seen := r.cycles
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		r, _ = read(samples)
		if r.cycles == seen {
			continue
		}
		seen = r.cycles
		if limit := o.LimitFor(r.live, r.overhead); limit != current {
			debug.SetMemoryLimit(limit)
			if o.Log != nil {
				o.Log.Debug("memory limit", "limitBytes", limit, "liveHeapBytes", r.live, "overheadBytes", r.overhead)
			}
			current = limit
		}
	}
}
