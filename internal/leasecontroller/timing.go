package leasecontroller

import (
	"context"
	"math/rand/v2"
	"time"

	"k8s.io/utils/clock"
)

// Timing constants of component-helpers' lease controller (shared by the
// kubelet and kube-apiserver).
const (
	// JitterFactor spreads periodic work over [period, 1.04*period) so that
	// processes started together do not stay in lock-step.
	JitterFactor = 0.04
	// BackoffStart doubles before the first sleep, so the first wait is 200ms.
	BackoffStart = 100 * time.Millisecond
	// MaxBackoff caps the wait between attempts to ensure the lease exists.
	MaxBackoff = 7 * time.Second
	// MaxUpdateRetries bounds the PUT attempts of one lease renewal.
	MaxUpdateRetries = 5
)

// jittered returns period stretched by a uniformly random fraction in
// [0, factor), drawn from u in [0, 1).
func jittered(period time.Duration, factor, u float64) time.Duration {
	if factor <= 0 {
		return period
	}
	return period + time.Duration(u*factor*float64(period))
}

// NextBackoff is the wait after prev: double it, never above MaxBackoff.
func NextBackoff(prev time.Duration) time.Duration {
	return min(2*prev, MaxBackoff)
}

// RunJittered calls f, then waits a jittered period measured from when f
// returned ("sliding", like wait.JitterUntil with sliding=true), until ctx is
// done. The period is measured after f so that a slow sync never queues up a
// burst of catch-up syncs.
func RunJittered(ctx context.Context, clk clock.Clock, period time.Duration, f func(context.Context)) {
	for ctx.Err() == nil {
		f(ctx)
		if !Sleep(ctx, clk, jittered(period, JitterFactor, rand.Float64())) {
			return
		}
	}
}

// Sleep waits d on clk; it returns false if ctx ended first.
func Sleep(ctx context.Context, clk clock.Clock, d time.Duration) bool {
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
