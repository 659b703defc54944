package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// schedule.go is the paced load of rate mode and of a paced etcd-cas: n
// items each due once per interval, their times spread evenly over it, as
// a real fleet's renewals are.

// dispatchSlack is how early an item may be handed out: waking for each of
// 10,000 renewals a second would cost more than the renewals' spread.
const dispatchSlack = time.Millisecond

// dueItem is item i of a schedule and when it was due.
type dueItem struct {
	i   int
	due time.Time
}

// runEvenly carries out n items on dispatchEvenly's schedule with workers
// goroutines until stop or ctx: worker w does item i with do(w, i). An
// item whose previous turn is still in flight when the next falls due
// skips it, counted as an overrun; busy(i) is the flag that says so, and
// its atomic hand-over orders an item's turn after its previous one on
// another worker, so do may keep per-item state without a lock.
func runEvenly(ctx context.Context, stop <-chan struct{}, rec *Recorder, n int, interval time.Duration, workers int, busy func(i int) *atomic.Bool, do func(w, i int)) {
	work := make(chan dueItem, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for d := range work {
				rec.ScheduleLag(time.Since(d.due))
				b := busy(d.i)
				if !b.CompareAndSwap(false, true) {
					rec.Failure(KindOverrun)
					continue
				}
				do(w, d.i)
				b.Store(false)
			}
		})
	}
	dispatchEvenly(ctx, stop, n, interval, work)
	close(work)
	wg.Wait()
}

// dispatchEvenly hands out items 0..n-1 in schedule order on work until
// stop or ctx: item i's k-th turn is due at start + k*interval +
// i*interval/n. A full work channel delays the items behind it, so a
// consumer that falls behind shows as schedule lag, not as lost turns.
func dispatchEvenly(ctx context.Context, stop <-chan struct{}, n int, interval time.Duration, work chan<- dueItem) {
	start := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for round := 0; ; round++ {
		roundStart := start.Add(time.Duration(round) * interval)
		for i := range n {
			due := roundStart.Add(time.Duration(int64(i) * int64(interval) / int64(n)))
			if wait := time.Until(due); wait > dispatchSlack {
				timer.Reset(wait)
				select {
				case <-timer.C:
				case <-stop:
					return
				case <-ctx.Done():
					return
				}
			}
			select {
			case work <- dueItem{i: i, due: due}:
			case <-stop:
				return
			case <-ctx.Done():
				return
			}
		}
	}
}
