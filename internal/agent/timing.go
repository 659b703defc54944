package agent

import (
	"context"
	"math/rand/v2"
	"time"

	"k8s.io/utils/clock"
)

// Timing constants shared with the kubelet and component-helpers' lease
// controller.
const (
	// jitterFactor spreads periodic work over [period, 1.04*period) so that
	// agents started together do not stay in lock-step.
	jitterFactor = 0.04
	// backoffStart doubles before the first sleep, so the first wait is 200ms.
	backoffStart = 100 * time.Millisecond
	// maxBackoff caps the wait between attempts to ensure the lease exists.
	maxBackoff = 7 * time.Second
	// maxUpdateRetries bounds the PUT attempts of one lease renewal and the
	// tries of one node status update (kubelet's nodeStatusUpdateRetry).
	maxUpdateRetries = 5
)

// jittered returns period stretched by a uniformly random fraction in
// [0, factor), drawn from u in [0, 1).
func jittered(period time.Duration, factor, u float64) time.Duration {
	if factor <= 0 {
		return period
	}
	return period + time.Duration(u*factor*float64(period))
}

// nextBackoff is the wait after prev: double it, never above maxBackoff.
func nextBackoff(prev time.Duration) time.Duration {
	return min(2*prev, maxBackoff)
}

// runJittered calls f, then waits a jittered period measured from when f
// returned ("sliding", like wait.JitterUntil with sliding=true), until ctx is
// done. The period is measured after f so that a slow sync never queues up a
// burst of catch-up syncs.
func runJittered(ctx context.Context, clk clock.Clock, period time.Duration, f func(context.Context)) {
	for ctx.Err() == nil {
		f(ctx)
		if !sleep(ctx, clk, jittered(period, jitterFactor, rand.Float64())) {
			return
		}
	}
}

// sleep waits d on clk; it returns false if ctx ended first.
func sleep(ctx context.Context, clk clock.Clock, d time.Duration) bool {
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
