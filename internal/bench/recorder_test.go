package bench

import (
	"sync"
	"testing"
	"time"
)

func TestRecorderWindowsAddUpToTotals(t *testing.T) {
	rec := NewRecorder()
	var wg sync.WaitGroup
	var windows []WindowStats
	stop := make(chan struct{})
	flusherDone := make(chan struct{})
	go func() {
		defer close(flusherDone)
		for {
			select {
			case <-stop:
				return
			default:
				windows = append(windows, rec.Flush())
			}
		}
	}()
	for w := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				rec.Success(time.Duration(w*1000+i) * time.Microsecond)
				if i%100 == 0 {
					rec.Failure("conflict")
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	<-flusherDone
	windows = append(windows, rec.Flush())

	var ops, errs uint64
	for _, ws := range windows {
		ops += ws.Ops
		errs += ws.Errors
	}
	tot := rec.Totals()
	if ops != 8000 || tot.Latency.Count() != 8000 {
		t.Errorf("windows saw %d ops, totals %d, want 8000", ops, tot.Latency.Count())
	}
	if errs != 80 || tot.Errors["conflict"] != 80 {
		t.Errorf("windows saw %d errors, totals %v, want 80 conflicts", errs, tot.Errors)
	}
	if tot.Latency.Max() != 7999*time.Microsecond {
		t.Errorf("max %v, want 7.999ms", tot.Latency.Max())
	}
}

func TestRecorderFirstFailureOfEachKind(t *testing.T) {
	rec := NewRecorder()
	if !rec.Failure("timeout") || rec.Failure("timeout") || !rec.Failure("conflict") {
		t.Error("Failure should report true exactly for the first error of each kind")
	}
	rec.ScheduleLag(3 * time.Millisecond)
	rec.ScheduleLag(time.Millisecond)
	if got := rec.Totals().MaxScheduleLag; got != 3*time.Millisecond {
		t.Errorf("max schedule lag %v, want 3ms", got)
	}
}
