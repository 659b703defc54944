package bench

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Result is the outcome of a run. Times are in milliseconds and seconds so
// that the JSON form reads without unit conversions.
type Result struct {
	// Workload describes what ran, e.g. "max: 64 clients over 1000 leases".
	Workload string `json:"workload"`
	// Interrupted is true when the run was cancelled before its duration.
	Interrupted bool `json:"interrupted,omitempty"`
	// ElapsedSeconds is the measured period, from the first operation to
	// the last one finishing.
	ElapsedSeconds float64 `json:"elapsedSeconds"`
	// Ops counts successful operations; Throughput is Ops per second.
	Ops        uint64  `json:"ops"`
	Throughput float64 `json:"throughput"`
	// Latency percentiles of successful operations.
	P50Ms float64 `json:"p50Ms"`
	P90Ms float64 `json:"p90Ms"`
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
	// Errors counts failed operations by kind (see ErrorKind).
	Errors      map[string]uint64 `json:"errors"`
	ErrorsTotal uint64            `json:"errorsTotal"`
	// MaxScheduleLagMs (rate mode) is how late the most delayed renewal
	// started compared to its schedule: large values mean the clients could
	// not keep up with the requested rate.
	MaxScheduleLagMs float64 `json:"maxScheduleLagMs,omitempty"`
	// Server is set when a server PID was given.
	Server *ServerStats `json:"server,omitempty"`
}

// ServerStats is what the server process spent during the measured period.
type ServerStats struct {
	PID        int     `json:"pid"`
	CPUSeconds float64 `json:"cpuSeconds"`
	// CPUMsPer1000Ops is the server's CPU time per thousand successful
	// operations (0 when there were none).
	CPUMsPer1000Ops float64 `json:"cpuMsPer1000Ops"`
	// PeakRSSBytes is VmHWM: the peak over the process's life, setup included.
	PeakRSSBytes uint64 `json:"peakRSSBytes"`
	// RunPeakRSSBytes is the highest RSS sampled at every progress line and
	// at the end of the measured period: the steady state, without the
	// setup's burst (a fleet registering at once).
	RunPeakRSSBytes uint64 `json:"runPeakRSSBytes"`
}

// newResult builds a result from the recorder's totals.
func newResult(workload string, elapsed time.Duration, t Totals) Result {
	h, errs := t.Latency, t.Errors
	r := Result{
		MaxScheduleLagMs: ms(t.MaxScheduleLag),
		Workload:         workload,
		ElapsedSeconds:   elapsed.Seconds(),
		Ops:              h.Count(),
		P50Ms:            ms(h.Quantile(0.50)),
		P90Ms:            ms(h.Quantile(0.90)),
		P99Ms:            ms(h.Quantile(0.99)),
		MaxMs:            ms(h.Max()),
		Errors:           errs,
	}
	if elapsed > 0 {
		r.Throughput = float64(r.Ops) / elapsed.Seconds()
	}
	for _, n := range errs {
		r.ErrorsTotal += n
	}
	return r
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// String is the final report line.
func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d ops in %.1fs, %.0f ops/s, latency p50 %.2fms p90 %.2fms p99 %.2fms max %.2fms, errors %d",
		r.Workload, r.Ops, r.ElapsedSeconds, r.Throughput, r.P50Ms, r.P90Ms, r.P99Ms, r.MaxMs, r.ErrorsTotal)
	if r.ErrorsTotal > 0 {
		b.WriteString(" (")
		for i, kind := range slices.Sorted(maps.Keys(r.Errors)) {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s %d", kind, r.Errors[kind])
		}
		b.WriteString(")")
	}
	if r.MaxScheduleLagMs > 0 {
		fmt.Fprintf(&b, ", max schedule lag %.1fms", r.MaxScheduleLagMs)
	}
	if r.Interrupted {
		b.WriteString(", interrupted")
	}
	if s := r.Server; s != nil {
		fmt.Fprintf(&b, "; server pid %d: CPU %.2fs (%.1f CPU-ms per 1000 ops), peak RSS %.1f MiB (measured period %.1f MiB)",
			s.PID, s.CPUSeconds, s.CPUMsPer1000Ops, float64(s.PeakRSSBytes)/(1<<20), float64(s.RunPeakRSSBytes)/(1<<20))
	}
	return b.String()
}
