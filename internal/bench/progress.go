package bench

import (
	"fmt"
	"io"
	"time"
)

// progress writes the once-a-second line: what the last window did and the
// running totals, so a stall or a burst of errors shows while it happens.
type progress struct {
	w      io.Writer
	start  time.Time
	last   time.Time
	ops    uint64
	errors uint64
}

func newProgress(w io.Writer, start time.Time) *progress {
	return &progress{w: w, start: start, last: start}
}

func (p *progress) line(now time.Time, ws WindowStats) {
	p.ops += ws.Ops
	p.errors += ws.Errors
	elapsed := now.Sub(p.start)
	window := now.Sub(p.last)
	p.last = now
	fmt.Fprintln(p.w, formatProgress(elapsed, window, ws, p.ops, p.errors))
}

// formatProgress renders one progress line. The window's rate is its ops
// divided by its real length, which a late ticker can stretch past a second.
func formatProgress(elapsed, window time.Duration, ws WindowStats, totalOps, totalErrors uint64) string {
	rate, cumulative := 0.0, 0.0
	if window > 0 {
		rate = float64(ws.Ops) / window.Seconds()
	}
	if elapsed > 0 {
		cumulative = float64(totalOps) / elapsed.Seconds()
	}
	return fmt.Sprintf("%6.1fs  last: %6d ops (%7.0f/s) p99 %7.2fms errors %d  |  total: %9d ops %7.0f ops/s errors %d",
		elapsed.Seconds(), ws.Ops, rate, ms(ws.P99), ws.Errors, totalOps, cumulative, totalErrors)
}
