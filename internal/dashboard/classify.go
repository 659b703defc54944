package dashboard

import "time"

// State is where a lease's heartbeat stands relative to its duration.
type State uint8

const (
	// Unknown: no renew time or no duration, so it cannot expire by the clock.
	Unknown State = iota
	// Healthy: renewed within LateFraction of its duration.
	Healthy
	// Late: a renewal is overdue but the lease has not expired.
	Late
	// Expired: renewTime + leaseDurationSeconds has passed.
	Expired
)

// LateFraction is the share of a lease's duration after which its heartbeat
// counts as late: one and a half renew intervals, where the kubelet (and
// `leasehold agent`) renews every quarter of the duration. A single delayed
// renewal is not late; a missed one is.
const LateFraction = 0.375

var stateNames = [...]string{"unknown", "healthy", "late", "expired"}

func (s State) String() string { return stateNames[s] }

// parseState is the inverse of String; ok is false for anything else.
func parseState(s string) (State, bool) {
	for i, n := range stateNames {
		if n == s {
			return State(i), true
		}
	}
	return Unknown, false
}

// Classify returns the state of a heartbeat renewed at renew (zero: never)
// with the given duration (0: none), seen at now, and its age as a fraction
// of the duration.
func Classify(renew time.Time, duration time.Duration, now time.Time) (State, float64) {
	return beatOf(renew, duration).classify(now.UnixNano())
}

// beat is a lease's renewal as two numbers, so that a tick can classify
// and encode every node lease from one dense array (Fleet.hot) instead of
// following a pointer to each record: BenchmarkSnapshot100k (a tick's
// summary, heat map and default rows at 100,000 leases and Nodes) took
// 113-146 ms walking the records and Nodes, 3.4-8.1 ms with Fleet.hot and
// counts kept per change (2026-11-28, alternating, load average 15).
type beat struct {
	renew int64 // renewTime, Unix ns
	dur   int64 // the duration in ns; 0 when there is none or no renewTime
}

// beatOf is the beat of a renewal at renew (zero: never) with duration.
func beatOf(renew time.Time, duration time.Duration) beat {
	if renew.IsZero() || duration <= 0 {
		return beat{}
	}
	return beat{renew: renew.UnixNano(), dur: int64(duration)}
}

// classify is Classify at now (Unix ns).
func (b beat) classify(now int64) (State, float64) {
	if b.dur <= 0 {
		return Unknown, 0
	}
	ratio := float64(now-b.renew) / float64(b.dur)
	switch {
	case ratio >= 1:
		return Expired, ratio
	case ratio >= LateFraction:
		return Late, ratio
	default:
		return Healthy, ratio
	}
}

// HeatByte is a heat-map cell's colour index: 0 for Unknown, else 1 + the
// age in hundredths of the duration, capped at 250 (2.49 durations). The
// page computes it from a cell's renewal code and duration (heatmap.go;
// heatByte in web/app.js, which mirrors this function and LateFraction).
func HeatByte(s State, ratio float64) byte {
	if s == Unknown {
		return 0
	}
	if ratio < 0 { // renewed "in the future": a skewed clock, shown as fresh
		ratio = 0
	}
	v := 1 + int(ratio*100)
	if v > 250 {
		v = 250
	}
	return byte(v)
}

// HistogramBuckets is the number of buckets of the age histogram: tenths of
// the duration from 0 to 2, and one more for anything older.
const HistogramBuckets = 21

// bucket is the histogram bucket of an age ratio.
func bucket(ratio float64) int {
	if ratio < 0 {
		ratio = 0
	}
	b := int(ratio * 10)
	if b >= HistogramBuckets {
		b = HistogramBuckets - 1
	}
	return b
}
