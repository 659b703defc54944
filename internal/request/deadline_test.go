package request

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"
)

type otherKey struct{}

func TestWithDeadlineCarriesTheRecordAndTheParentsValues(t *testing.T) {
	rec := &Record{AuditID: "a"}
	parent := context.WithValue(context.Background(), otherKey{}, "v")
	ctx, cancel := WithDeadline(parent, rec, time.Now().Add(time.Hour))
	defer cancel()
	if RecordFrom(ctx) != rec {
		t.Fatal("RecordFrom does not find the record")
	}
	if ctx.Value(otherKey{}) != "v" {
		t.Fatal("a parent's value is lost")
	}
	ctx.Done() // built: values still come through
	if RecordFrom(ctx) != rec || ctx.Value(otherKey{}) != "v" {
		t.Fatal("values lost once Done was built")
	}
}

func TestWithDeadlineTakesTheEarlierDeadline(t *testing.T) {
	early := time.Now().Add(time.Minute)
	parent, stop := context.WithDeadline(context.Background(), early)
	defer stop()
	ctx, cancel := WithDeadline(parent, nil, early.Add(time.Hour))
	defer cancel()
	if d, ok := ctx.Deadline(); !ok || !d.Equal(early) {
		t.Fatalf("Deadline() = %v, %v; want the parent's %v", d, ok, early)
	}
	late := time.Now().Add(time.Hour)
	ctx2, cancel2 := WithDeadline(context.Background(), nil, late)
	defer cancel2()
	if d, ok := ctx2.Deadline(); !ok || !d.Equal(late) {
		t.Fatalf("Deadline() = %v, %v; want %v", d, ok, late)
	}
}

// isClosed tells whether ch is closed, waiting at most wait for it.
func isClosed(ch <-chan struct{}, wait time.Duration) bool {
	select {
	case <-ch:
		return true
	default:
	}
	select {
	case <-ch:
		return true
	case <-time.After(wait):
		return false
	}
}

func TestWithDeadlineEndsEveryWay(t *testing.T) {
	for _, c := range []struct {
		name string
		// end ends ctx (made with a deadline 50 ms away when short),
		// after Done was asked for when early.
		short, early bool
		end          func(parentCancel, cancel context.CancelFunc)
		want         error
	}{
		{"finished before Done", false, false, func(_, cancel context.CancelFunc) { cancel() }, context.Canceled},
		{"finished after Done", false, true, func(_, cancel context.CancelFunc) { cancel() }, context.Canceled},
		{"client gone before Done", false, false, func(pc, _ context.CancelFunc) { pc() }, context.Canceled},
		{"client gone after Done", false, true, func(pc, _ context.CancelFunc) { pc() }, context.Canceled},
		{"deadline before Done", true, false, func(_, _ context.CancelFunc) { time.Sleep(80 * time.Millisecond) }, context.DeadlineExceeded},
		{"deadline after Done", true, true, func(_, _ context.CancelFunc) {}, context.DeadlineExceeded},
	} {
		t.Run(c.name, func(t *testing.T) {
			parent, parentCancel := context.WithCancel(context.Background())
			defer parentCancel()
			d := time.Hour
			if c.short {
				d = 50 * time.Millisecond
			}
			ctx, cancel := WithDeadline(parent, nil, time.Now().Add(d))
			defer cancel()
			if err := ctx.Err(); err != nil {
				t.Fatalf("Err() = %v before anything ended", err)
			}
			var done <-chan struct{}
			if c.early {
				done = ctx.Done()
				if isClosed(done, 0) {
					t.Fatal("Done closed before anything ended")
				}
			}
			c.end(parentCancel, cancel)
			if done == nil {
				if err := ctx.Err(); !errors.Is(err, c.want) {
					t.Fatalf("Err() = %v, want %v", err, c.want)
				}
				done = ctx.Done()
			}
			if !isClosed(done, 5*time.Second) {
				t.Fatal("Done did not close")
			}
			if err := ctx.Err(); !errors.Is(err, c.want) {
				t.Fatalf("Err() = %v once done, want %v", err, c.want)
			}
			if err := context.Cause(ctx); !errors.Is(err, c.want) {
				t.Fatalf("Cause() = %v, want %v", err, c.want)
			}
			// A context derived now is done at once.
			child, stop := context.WithCancel(ctx)
			defer stop()
			if !isClosed(child.Done(), time.Second) || !errors.Is(child.Err(), c.want) {
				t.Fatalf("a child made afterwards: Err() = %v, want %v", child.Err(), c.want)
			}
		})
	}
}

// The first error seen stays the error, as the standard contexts latch
// theirs, and a Done built afterwards agrees with it.
func TestWithDeadlineLatchesTheFirstError(t *testing.T) {
	parent, parentCancel := context.WithCancel(context.Background())
	ctx, cancel := WithDeadline(parent, nil, time.Now().Add(-time.Second))
	defer cancel()
	if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err() = %v past the deadline", err)
	}
	parentCancel()
	if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err() = %v after the parent was canceled too; the deadline came first", err)
	}
	if !isClosed(ctx.Done(), 0) {
		t.Fatal("Done not closed")
	}
	if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err() = %v once Done was built", err)
	}
}

// Contexts derived from a running one register with the context Done
// builds, as they would with context.WithDeadline's, instead of each
// starting a goroutine to watch it, and end with it.
func TestWithDeadlineChildrenRegisterWithoutGoroutines(t *testing.T) {
	ctx, cancel := WithDeadline(context.Background(), nil, time.Now().Add(time.Hour))
	before := runtime.NumGoroutine()
	children := make([]context.Context, 100)
	for i := range children {
		var stop context.CancelFunc
		children[i], stop = context.WithTimeout(ctx, time.Hour)
		defer stop()
	}
	if after := runtime.NumGoroutine(); after > before+5 {
		t.Fatalf("%d goroutines for 100 derived contexts, %d before", after, before)
	}
	cancel()
	for i, c := range children {
		if !isClosed(c.Done(), 5*time.Second) || !errors.Is(c.Err(), context.Canceled) {
			t.Fatalf("child %d: Err() = %v after the request's cancel", i, c.Err())
		}
	}
}

func TestWithDeadlineIsSafeForConcurrentUse(t *testing.T) {
	for range 50 {
		parent, parentCancel := context.WithCancel(context.Background())
		defer parentCancel()
		ctx, cancel := WithDeadline(parent, nil, time.Now().Add(time.Millisecond))
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				switch g {
				case 0:
					<-ctx.Done()
				case 1:
					for ctx.Err() == nil {
						runtime.Gosched()
					}
				case 2:
					cancel()
				case 3:
					parentCancel()
				}
			})
		}
		wg.Wait()
		err := ctx.Err()
		if closed := isClosed(ctx.Done(), 0); err == nil || !closed {
			t.Fatalf("Err() = %v, Done closed %v after every end", err, closed)
		}
		if ctx.Err() != err {
			t.Fatalf("Err() changed from %v to %v", err, ctx.Err())
		}
	}
}
