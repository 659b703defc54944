package leasecontroller

import (
	"context"
	"sync"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

func TestBackoffSequence(t *testing.T) {
	want := []time.Duration{
		200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, 6400 * time.Millisecond,
		7 * time.Second, 7 * time.Second,
	}
	d := BackoffStart
	for i, w := range want {
		d = NextBackoff(d)
		if d != w {
			t.Fatalf("wait %d = %s, want %s", i+1, d, w)
		}
	}
}

func TestJitteredBounds(t *testing.T) {
	const period = 10 * time.Second
	tests := []struct {
		factor, u float64
		want      time.Duration
	}{
		{JitterFactor, 0, period},
		{JitterFactor, 0.5, period + 200*time.Millisecond},
		{JitterFactor, 0.999999, period + 399999600*time.Nanosecond},
		{0, 0.7, period},
	}
	for _, tt := range tests {
		if got := jittered(period, tt.factor, tt.u); got != tt.want {
			t.Errorf("jittered(%s, %v, %v) = %s, want %s", period, tt.factor, tt.u, got, tt.want)
		}
	}
	// Whatever u is drawn, the renew period of a 40 s lease stays within
	// [10 s, 10.4 s): well inside the lease duration.
	for u := 0.0; u < 1; u += 0.01 {
		if got := jittered(period, JitterFactor, u); got < period || got >= period+400*time.Millisecond {
			t.Fatalf("jittered(%v) = %s, outside [10s, 10.4s)", u, got)
		}
	}
}

// TestRunJitteredSlidesAndStops drives the loop with a fake clock: f runs at
// once, then again only after a full (jittered) period measured from when f
// returned, and the loop's goroutine ends when the context is cancelled.
func TestRunJitteredSlidesAndStops(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	ctx, cancel := context.WithCancel(context.Background())
	calls := make(chan time.Time, 10)
	var wg sync.WaitGroup
	wg.Go(func() {
		RunJittered(ctx, clk, 10*time.Second, func(context.Context) {
			calls <- clk.Now()
			// A slow sync: the next period must start after it.
			clk.Step(3 * time.Second)
		})
	})
	first := <-calls
	if !first.Equal(time.Unix(1000, 0)) {
		t.Fatalf("first call at %v, want immediately", first)
	}
	waitForWaiters(t, clk)
	clk.Step(9999 * time.Millisecond) // less than the minimum period
	select {
	case at := <-calls:
		t.Fatalf("second call at %v, before a full period after the first sync ended", at)
	case <-time.After(50 * time.Millisecond):
	}
	clk.Step(401 * time.Millisecond) // now past the maximum jittered period
	second := <-calls
	if gap := second.Sub(first); gap < 13*time.Second || gap > 13400*time.Millisecond {
		t.Fatalf("gap between syncs = %s, want sync time 3s + [10s, 10.4s]", gap)
	}
	waitForWaiters(t, clk)
	cancel()
	wg.Wait()
}

func waitForWaiters(t *testing.T, clk *testingclock.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("loop never started waiting on the clock")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestSleepEndsOnCancel(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, clk, time.Hour) {
		t.Fatal("Sleep returned true on a cancelled context")
	}
	if clk.HasWaiters() {
		t.Fatal("Sleep left its timer registered")
	}
}
