package bench

import (
	"maps"
	"sync"
	"time"
)

// Recorder collects the outcome of every operation from many goroutines.
// Observations go into a window histogram that Flush hands over once per
// progress interval and folds into the run's total, so progress lines show
// the last second and the final result shows the whole run from the same
// data. A single mutex is enough: even 20,000 operations a second hold it for
// well under a percent of a core.
type Recorder struct {
	mu           sync.Mutex
	window       *Histogram
	windowErrors uint64
	total        *Histogram
	errors       map[string]uint64
	maxLag       time.Duration
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder {
	return &Recorder{window: NewHistogram(), total: NewHistogram(), errors: map[string]uint64{}}
}

// Success records one successful operation that took d.
func (r *Recorder) Success(d time.Duration) {
	r.mu.Lock()
	r.window.Record(d)
	r.mu.Unlock()
}

// Failure records one failed operation under an error kind (see ErrorKind)
// and says whether it is the first of its kind, so that callers can log one
// example of each kind without flooding the log.
func (r *Recorder) Failure(kind string) (first bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.windowErrors++
	r.errors[kind]++
	return r.errors[kind] == 1
}

// ScheduleLag records how late an operation started compared to when it was
// due (rate mode); only the maximum is kept.
func (r *Recorder) ScheduleLag(d time.Duration) {
	r.mu.Lock()
	r.maxLag = max(r.maxLag, d)
	r.mu.Unlock()
}

// WindowStats is what happened since the previous Flush.
type WindowStats struct {
	Ops    uint64
	P99    time.Duration
	Errors uint64
}

// Flush closes the current window: it returns its statistics and merges it
// into the run's totals.
func (r *Recorder) Flush() WindowStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	ws := WindowStats{Ops: r.window.Count(), P99: r.window.Quantile(0.99), Errors: r.windowErrors}
	r.total.Merge(r.window)
	r.window.Reset()
	r.windowErrors = 0
	return ws
}

// Totals is a copy of everything recorded over a run.
type Totals struct {
	Latency        *Histogram
	Errors         map[string]uint64
	MaxScheduleLag time.Duration
}

// Totals flushes the open window and returns a copy of the run's totals.
func (r *Recorder) Totals() Totals {
	r.Flush()
	r.mu.Lock()
	defer r.mu.Unlock()
	h := NewHistogram()
	h.Merge(r.total)
	return Totals{Latency: h, Errors: maps.Clone(r.errors), MaxScheduleLag: r.maxLag}
}
