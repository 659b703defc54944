package bench

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

func TestResultFromTotals(t *testing.T) {
	h := NewHistogram()
	for i := 1; i <= 100; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	res := newResult("max: 2 clients over 4 leases", 2*time.Second, Totals{
		Latency: h, Errors: map[string]uint64{"timeout": 2, KindConflict: 3}, MaxScheduleLag: 1500 * time.Microsecond,
	})
	if res.Ops != 100 || res.Throughput != 50 || res.ErrorsTotal != 5 {
		t.Errorf("ops %d throughput %v errors %d, want 100, 50, 5", res.Ops, res.Throughput, res.ErrorsTotal)
	}
	// Percentiles come from the histogram (within 0.5%); max and lag are exact.
	near := func(got, want float64) bool { return math.Abs(got-want) <= want*0.005 }
	if !near(res.P50Ms, 50) || !near(res.P90Ms, 90) || !near(res.P99Ms, 99) || res.MaxMs != 100 || res.MaxScheduleLagMs != 1.5 {
		t.Errorf("p50/p90/p99/max/lag %v/%v/%v/%v/%v, want 50/90/99/100/1.5 (ms)",
			res.P50Ms, res.P90Ms, res.P99Ms, res.MaxMs, res.MaxScheduleLagMs)
	}
}

func TestResultString(t *testing.T) {
	res := Result{
		Workload: "max: 64 clients over 1000 leases", ElapsedSeconds: 30.02, Ops: 360000, Throughput: 11992.3,
		P50Ms: 4.2, P90Ms: 7.5, P99Ms: 12.25, MaxMs: 40.5,
		Errors: map[string]uint64{"timeout": 1, KindConflict: 2}, ErrorsTotal: 3,
		Server: &ServerStats{PID: 77, CPUSeconds: 25.5, CPUMsPer1000Ops: 70.83, PeakRSSBytes: 300 << 20, RunPeakRSSBytes: 250 << 20},
	}
	want := "max: 64 clients over 1000 leases: 360000 ops in 30.0s, 11992 ops/s, " +
		"latency p50 4.20ms p90 7.50ms p99 12.25ms max 40.50ms, errors 3 (conflict 2, timeout 1); " +
		"server pid 77: CPU 25.50s (70.8 CPU-ms per 1000 ops), peak RSS 300.0 MiB (measured period 250.0 MiB)"
	if got := res.String(); got != want {
		t.Errorf("String() =\n%s\nwant\n%s", got, want)
	}

	quiet := Result{Workload: "rate", ElapsedSeconds: 1, Ops: 10, Throughput: 10, MaxScheduleLagMs: 2, Interrupted: true}
	if got := quiet.String(); !strings.HasSuffix(got, "errors 0, max schedule lag 2.0ms, interrupted") {
		t.Errorf("String() = %q", got)
	}
}

func TestResultJSON(t *testing.T) {
	res := Result{Workload: "w", Ops: 5, P99Ms: 1.5, Errors: map[string]uint64{"conflict": 1}, ErrorsTotal: 1,
		Server: &ServerStats{PID: 1, CPUSeconds: 2, PeakRSSBytes: 3}}
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"workload", "ops", "throughput", "p50Ms", "p90Ms", "p99Ms", "maxMs", "errors", "errorsTotal", "server"} {
		if _, ok := fields[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, data)
		}
	}
	if _, ok := fields["interrupted"]; ok {
		t.Errorf("interrupted should be omitted when false: %s", data)
	}
	var back Result
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.String() != res.String() {
		t.Errorf("round trip changed the result:\n%s\n%s", back.String(), res.String())
	}
}

func TestFormatProgress(t *testing.T) {
	got := formatProgress(5*time.Second, 1250*time.Millisecond, WindowStats{Ops: 15000, P99: 8250 * time.Microsecond, Errors: 2}, 60000, 3)
	want := "   5.0s  last:  15000 ops (  12000/s) p99    8.25ms errors 2  |  total:     60000 ops   12000 ops/s errors 3"
	if got != want {
		t.Errorf("progress line\n%q\nwant\n%q", got, want)
	}
}
