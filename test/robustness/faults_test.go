package robustness

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"time"
)

// Fault kinds.
const (
	faultKill  = "kill -9 and restart"
	faultPause = "SIGSTOP/SIGCONT"
)

// faultPlan sizes the injector: a fault every MinGap to MaxGap, a pause
// lasting up to MaxPause, a restart up to MaxDown after a kill.
type faultPlan struct {
	MinGap, MaxGap, MaxPause, MaxDown time.Duration
}

// injector injects faults into srv at random moments until ctx ends, and
// leaves the server running and resumed.
type injector struct {
	srv  *server
	h    *history
	rng  *rand.Rand
	plan faultPlan

	mu     sync.Mutex
	counts map[string]int
	log    []string
	err    error
}

func (in *injector) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(in.rng.Int63n(int64(hi-lo)+1))
}

func (in *injector) run(ctx context.Context) {
	for {
		sleep(ctx, in.between(in.plan.MinGap, in.plan.MaxGap))
		if ctx.Err() != nil {
			return
		}
		kind := faultKill
		if in.rng.Intn(2) == 0 {
			kind = faultPause
		}
		start := time.Now()
		var d time.Duration
		switch kind {
		case faultKill:
			d = in.between(0, in.plan.MaxDown)
			in.srv.kill()
			in.h.killed()
			time.Sleep(d)
			if err := in.srv.start(); err != nil {
				in.mu.Lock()
				in.err = fmt.Errorf("restart after kill: %w", err)
				in.mu.Unlock()
				return
			}
		case faultPause:
			d = in.between(100*time.Millisecond, in.plan.MaxPause)
			in.srv.pause()
			time.Sleep(d)
			in.srv.resume()
		}
		in.mu.Lock()
		in.counts[kind]++
		in.log = append(in.log, fmt.Sprintf("%.3fs %s (%v; back after %v)", float64(in.h.now())/1e9, kind, d.Round(time.Millisecond), time.Since(start).Round(time.Millisecond)))
		in.mu.Unlock()
	}
}
