package bench

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunEvenlySkipsItemsStillInFlight runs two items every 20 ms for
// 300 ms. Item 1 takes no time and runs at every turn; item 0 takes 70 ms,
// so the turns that fall due while it runs are skipped as overruns, it
// never runs twice at once, and its runs and overruns together are its
// turns, as many as item 1's (give or take the one the end cuts).
func TestRunEvenlySkipsItemsStillInFlight(t *testing.T) {
	rec := NewRecorder()
	var busy [2]atomic.Bool
	var runs [2]atomic.Int32
	var running, overlapped atomic.Bool
	stop := make(chan struct{})
	time.AfterFunc(300*time.Millisecond, func() { close(stop) })
	runEvenly(context.Background(), stop, rec, 2, 20*time.Millisecond, 4,
		func(i int) *atomic.Bool { return &busy[i] },
		func(_, i int) {
			runs[i].Add(1)
			if i == 0 {
				if running.Swap(true) {
					overlapped.Store(true)
				}
				time.Sleep(70 * time.Millisecond)
				running.Store(false)
			}
		})
	slow, fast, overruns := runs[0].Load(), runs[1].Load(), rec.Totals().Errors[KindOverrun]
	if overlapped.Load() {
		t.Error("item 0 ran twice at once")
	}
	if slow < 1 || overruns < 1 {
		t.Errorf("item 0 ran %d times with %d overruns, want both", slow, overruns)
	}
	if turns := int64(slow) + int64(overruns); turns < int64(fast)-1 || turns > int64(fast)+1 {
		t.Errorf("item 0 had %d turns (%d runs, %d overruns), item 1 %d: want as many", turns, slow, overruns, fast)
	}
}
