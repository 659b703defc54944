package bench

import (
	"context"
	"fmt"
	"time"
)

// Workload is one way of generating load. Run drives it; the max and rate
// workloads of this package are built on it, and another (such as a fleet of
// real node agents) only has to implement it and report each operation to
// the Recorder.
type Workload interface {
	// Name describes the workload for the report, e.g. "max: 64 clients
	// over 1000 leases".
	Name() string
	// Setup prepares the server before the clock starts (namespace,
	// objects) and is not measured.
	Setup(ctx context.Context) error
	// Run generates load, reporting every operation to rec. It starts no
	// new operation once stop is closed, abandons in-flight ones when ctx
	// is cancelled, and returns only when all its goroutines have ended.
	Run(ctx context.Context, stop <-chan struct{}, rec *Recorder) error
}

// Closer is implemented by workloads whose Setup starts work that lives on
// through Run: the fleet's agents start during Setup, are measured during
// Run and stop in Close. Run calls Close exactly once after a Setup was
// attempted, whatever happens, and after the measured period, so the
// teardown is not measured.
type Closer interface {
	Close()
}

// Run sets w up, runs it for cfg.Duration writing a progress line to
// cfg.Progress every cfg.ProgressInterval, and returns the result. If ctx is
// cancelled during the measured period the result covers the time until
// then and is marked Interrupted; a cancellation during setup is an error.
func Run(ctx context.Context, cfg Config, w Workload) (Result, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validateCommon(); err != nil {
		return Result{}, fmt.Errorf("invalid configuration: %w", err)
	}
	setupStart := time.Now()
	if c, ok := w.(Closer); ok {
		defer c.Close()
	}
	if err := w.Setup(ctx); err != nil {
		return Result{}, fmt.Errorf("setting up %s: %w", w.Name(), err)
	}
	fmt.Fprintf(cfg.Progress, "setup of %s done in %.1fs\n", w.Name(), time.Since(setupStart).Seconds())

	var server *serverSampler
	if cfg.ServerPID != 0 {
		s, err := startServerSampler(cfg.ServerPID)
		if err != nil {
			return Result{}, err
		}
		server = s
	}

	rec := NewRecorder()
	stop := make(chan struct{})
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- w.Run(ctx, stop, rec) }()

	progress := newProgress(cfg.Progress, start)
	ticker := time.NewTicker(cfg.ProgressInterval)
	defer ticker.Stop()
	end := time.NewTimer(cfg.Duration)
	defer end.Stop()

	interrupted := false
	var runErr error
	finished := false
	for !finished {
		select {
		case now := <-ticker.C:
			progress.line(now, rec.Flush())
			if server != nil {
				server.sampleRSS()
			}
		case <-end.C:
			close(stop)
			runErr, finished = <-done, true
		case <-ctx.Done():
			interrupted = true
			close(stop)
			runErr, finished = <-done, true
		case runErr = <-done:
			// The workload ended by itself before its time: nothing more
			// will be recorded.
			close(stop)
			finished = true
		}
	}
	elapsed := time.Since(start)
	if runErr != nil {
		return Result{}, fmt.Errorf("running %s: %w", w.Name(), runErr)
	}

	res := newResult(w.Name(), elapsed, rec.Totals())
	res.Interrupted = interrupted
	if server != nil {
		stats, err := server.finish(res.Ops)
		if err != nil {
			return res, err
		}
		res.Server = &stats
	}
	return res, nil
}

// serverSampler measures a local server process over the measured period.
type serverSampler struct {
	pid      int
	cpuStart time.Duration
	// runPeak is the highest RSS sampled so far in the measured period.
	runPeak uint64
}

// sampleRSS takes one RSS sample. A failed read (the process gone) is
// reported by finish, which reads the process again.
func (s *serverSampler) sampleRSS() {
	if rss, err := ProcRSS(s.pid); err == nil {
		s.runPeak = max(s.runPeak, rss)
	}
}

func startServerSampler(pid int) (*serverSampler, error) {
	cpu, err := ProcCPUTime(pid)
	if err != nil {
		return nil, fmt.Errorf("server process: %w", err)
	}
	return &serverSampler{pid: pid, cpuStart: cpu}, nil
}

func (s *serverSampler) finish(ops uint64) (ServerStats, error) {
	cpu, err := ProcCPUTime(s.pid)
	if err != nil {
		return ServerStats{}, fmt.Errorf("server process after the run: %w", err)
	}
	// The last sample before VmHWM, which is never below an earlier RSS.
	s.sampleRSS()
	rss, err := ProcPeakRSS(s.pid)
	if err != nil {
		return ServerStats{}, fmt.Errorf("server process after the run: %w", err)
	}
	used := cpu - s.cpuStart
	st := ServerStats{PID: s.pid, CPUSeconds: used.Seconds(), PeakRSSBytes: rss, RunPeakRSSBytes: s.runPeak}
	if ops > 0 {
		st.CPUMsPer1000Ops = ms(used) * 1000 / float64(ops)
	}
	return st, nil
}
