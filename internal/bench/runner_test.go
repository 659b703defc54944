package bench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// tickWorkload is a real workload with no server: each of its workers
// "operates" by sleeping a fixed time, so the runner's timing, progress and
// accounting can be checked against known numbers.
type tickWorkload struct {
	workers  int
	op       time.Duration
	setupErr error
	failures int // this many operations of worker 0 fail as "timeout"
}

func (w *tickWorkload) Name() string                    { return "tick" }
func (w *tickWorkload) Setup(ctx context.Context) error { return w.setupErr }

func (w *tickWorkload) Run(ctx context.Context, stop <-chan struct{}, rec *Recorder) error {
	var wg sync.WaitGroup
	for i := range w.workers {
		wg.Go(func() {
			failures := 0
			if i == 0 {
				failures = w.failures
			}
			t := time.NewTimer(w.op)
			defer t.Stop()
			for {
				start := time.Now()
				select {
				case <-t.C:
				case <-ctx.Done():
					return
				}
				if failures > 0 {
					failures--
					rec.Failure(KindTimeout)
				} else {
					rec.Success(time.Since(start))
				}
				select {
				case <-stop:
					return
				default:
				}
				t.Reset(w.op)
			}
		})
	}
	wg.Wait()
	return nil
}

func TestRunMeasuresAndReports(t *testing.T) {
	var progress bytes.Buffer
	cfg := Config{Namespace: "n", Clients: 1, Duration: 1200 * time.Millisecond, ProgressInterval: 250 * time.Millisecond, Progress: &progress}
	res, err := Run(context.Background(), cfg, &tickWorkload{workers: 4, op: 10 * time.Millisecond, failures: 3})
	if err != nil {
		t.Fatal(err)
	}
	// 4 workers at ~100 ops/s each for 1.2 s; timers only run late, so the
	// count is bounded above firmly and below loosely (a loaded machine).
	if res.Ops+res.ErrorsTotal > 4*121 || res.Ops < 100 {
		t.Errorf("%d ops and %d errors from 4 workers of 10ms over 1.2s", res.Ops, res.ErrorsTotal)
	}
	if res.Errors[KindTimeout] != 3 || res.ErrorsTotal != 3 {
		t.Errorf("errors %v, want 3 timeouts", res.Errors)
	}
	if res.P50Ms < 10 || res.MaxMs < res.P99Ms || res.P99Ms < res.P90Ms || res.P90Ms < res.P50Ms {
		t.Errorf("latencies p50 %v p90 %v p99 %v max %v: want 10ms operations, ordered", res.P50Ms, res.P90Ms, res.P99Ms, res.MaxMs)
	}
	if res.ElapsedSeconds < 1.2 || res.Interrupted {
		t.Errorf("elapsed %vs interrupted %v", res.ElapsedSeconds, res.Interrupted)
	}
	lines := strings.Split(strings.TrimSpace(progress.String()), "\n")
	if !strings.HasPrefix(lines[0], "setup of tick done") {
		t.Errorf("first line %q, want the setup line", lines[0])
	}
	if n := len(lines) - 1; n < 3 || n > 5 {
		t.Errorf("%d progress lines over 1.2s at 250ms:\n%s", n, progress.String())
	}
	for _, l := range lines[1:] {
		if !strings.Contains(l, "ops/s") || !strings.Contains(l, "p99") {
			t.Errorf("progress line %q lacks rate or p99", l)
		}
	}
}

func TestRunInterrupted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := Run(ctx, Config{Namespace: "n", Clients: 1, Duration: time.Minute}, &tickWorkload{workers: 2, op: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || time.Since(start) > 5*time.Second || res.Ops == 0 {
		t.Errorf("interrupted %v after %v with %d ops", res.Interrupted, time.Since(start), res.Ops)
	}
}

func TestRunReportsServerStats(t *testing.T) {
	cfg := Config{Namespace: "n", Clients: 1, Duration: 300 * time.Millisecond, ServerPID: os.Getpid()}
	res, err := Run(context.Background(), cfg, &tickWorkload{workers: 1, op: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Server == nil || res.Server.PID != cfg.ServerPID || res.Server.PeakRSSBytes == 0 || res.Server.CPUSeconds < 0 {
		t.Fatalf("server stats %+v", res.Server)
	}
	if s := res.Server; s.RunPeakRSSBytes == 0 || s.RunPeakRSSBytes > s.PeakRSSBytes {
		t.Errorf("measured-period RSS %d bytes: want sampled, and at most the lifetime peak %d", s.RunPeakRSSBytes, s.PeakRSSBytes)
	}
	if !strings.Contains(res.String(), "peak RSS") {
		t.Errorf("final line lacks server stats: %s", res)
	}
}

func TestRunRejectsBadConfigAndSetupErrors(t *testing.T) {
	if _, err := Run(context.Background(), Config{Namespace: "n", Clients: 1}, &tickWorkload{workers: 1, op: time.Millisecond}); err == nil {
		t.Error("zero duration accepted")
	}
	boom := errors.New("boom")
	_, err := Run(context.Background(), Config{Namespace: "n", Clients: 1, Duration: time.Second}, &tickWorkload{setupErr: boom})
	if !errors.Is(err, boom) {
		t.Errorf("setup error %v, want it wrapped", err)
	}
	if _, err := Run(context.Background(), Config{Namespace: "n", Clients: 1, Duration: time.Second, ServerPID: 1 << 30}, &tickWorkload{workers: 1, op: time.Millisecond}); err == nil {
		t.Error("a server PID that does not exist accepted")
	}
	if _, err := NewMaxWorkload(Config{Namespace: "n", Clients: 4, Leases: 3, Duration: time.Second}, nil); err == nil {
		t.Error("fewer leases than clients accepted")
	}
	if _, err := NewRateWorkload(Config{Namespace: "n", Clients: 4, Nodes: 10, Duration: time.Second}, nil); err == nil {
		t.Error("rate mode without an interval accepted")
	}
}
