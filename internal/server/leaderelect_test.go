package server

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rl "k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/leasehold/leasehold/internal/controller"
)

// stubRunner is a controller that runs until its context ends, then takes
// linger (or until release is closed) to return.
type stubRunner struct {
	started, returned atomic.Bool
	linger            time.Duration
	release           chan struct{}
}

func (r *stubRunner) Name() string { return "stub" }

func (r *stubRunner) Run(ctx context.Context) error {
	r.started.Store(true)
	<-ctx.Done()
	if r.release != nil {
		<-r.release
	}
	time.Sleep(r.linger)
	r.returned.Store(true)
	return nil
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startLead runs lead in a goroutine, waits until every runner started,
// and returns a wait for lead's return.
func startLead(t *testing.T, term *leadership, runners ...*stubRunner) func() {
	t.Helper()
	rs := make([]controller.Runner, len(runners))
	for i, r := range runners {
		rs[i] = r
	}
	var wg sync.WaitGroup
	wg.Go(func() { term.lead(context.Background(), rs) })
	deadline := time.Now().Add(5 * time.Second)
	for _, r := range runners {
		for !r.started.Load() {
			if time.Now().After(deadline) {
				t.Fatal("controllers did not start")
			}
			time.Sleep(time.Millisecond)
		}
	}
	return wg.Wait
}

func TestLeadershipStopWaitsForEveryController(t *testing.T) {
	exited := make(chan int, 1)
	term := &leadership{grace: 5 * time.Second, log: quietLog(), exit: func(c int) { exited <- c }}
	a, b := &stubRunner{linger: 50 * time.Millisecond}, &stubRunner{linger: 100 * time.Millisecond}
	wait := startLead(t, term, a, b)
	term.stop("test")
	if !a.returned.Load() || !b.returned.Load() {
		t.Fatal("stop returned before every controller had")
	}
	wait()
	term.stop("again") // idempotent
	select {
	case c := <-exited:
		t.Fatalf("exit(%d) although the controllers stopped in time", c)
	default:
	}
}

func TestLeadershipExitsWhenControllersDoNotStop(t *testing.T) {
	stuck := &stubRunner{release: make(chan struct{})}
	exited := make(chan int, 1)
	term := &leadership{grace: 100 * time.Millisecond, log: quietLog(), exit: func(c int) {
		exited <- c
		close(stuck.release) // a real exit ends the process; let the test's goroutine end
	}}
	wait := startLead(t, term, stuck)
	start := time.Now()
	term.stop("test")
	select {
	case c := <-exited:
		if c != 1 {
			t.Fatalf("exit(%d), want exit(1)", c)
		}
		if took := time.Since(start); took < term.grace {
			t.Fatalf("exit after %v, before the grace period %v", took, term.grace)
		}
	default:
		t.Fatal("a controller that does not stop within the grace period did not end the process")
	}
	wait()
}

func TestLeadershipNeverStartsAfterStop(t *testing.T) {
	term := &leadership{grace: time.Second, log: quietLog(), exit: func(int) { t.Error("exit called") }}
	term.stop("before leading")
	r := &stubRunner{}
	term.lead(context.Background(), []controller.Runner{r})
	if r.started.Load() || term.leading() {
		t.Fatal("controllers started in a term that had already ended")
	}
}

// recordingLock is a resource lock that records the holder it last read
// and the updates written, and whether the term's controllers had
// returned at each update.
type recordingLock struct {
	rl.Interface
	holder  string
	runner  *stubRunner
	updates []bool // controllers returned at the time of each update
}

func (l *recordingLock) Identity() string { return "me_1" }

func (l *recordingLock) Get(context.Context) (*rl.LeaderElectionRecord, []byte, error) {
	return &rl.LeaderElectionRecord{HolderIdentity: l.holder}, nil, nil
}

func (l *recordingLock) Update(_ context.Context, _ rl.LeaderElectionRecord) error {
	l.updates = append(l.updates, l.runner.returned.Load())
	return nil
}

func TestTermLockReleasesOnlyAfterControllersStopped(t *testing.T) {
	r := &stubRunner{linger: 50 * time.Millisecond}
	term := &leadership{grace: 5 * time.Second, log: quietLog(), exit: func(int) { t.Error("exit called") }}
	inner := &recordingLock{holder: "me_1", runner: r}
	lock := &termLock{Interface: inner, term: term}
	wait := startLead(t, term, r)

	// A renewal does not stop anything; a release stops first.
	if err := lock.Update(context.Background(), rl.LeaderElectionRecord{HolderIdentity: "me_1"}); err != nil {
		t.Fatal(err)
	}
	if err := lock.Update(context.Background(), rl.LeaderElectionRecord{HolderIdentity: ""}); err != nil {
		t.Fatal(err)
	}
	wait()
	if len(inner.updates) != 2 || inner.updates[0] || !inner.updates[1] {
		t.Fatalf("controllers returned at (renewal, release) = %v, want [false true]", inner.updates)
	}
}

func TestTermLockStopsWhenAnotherHolds(t *testing.T) {
	r := &stubRunner{}
	term := &leadership{grace: 5 * time.Second, log: quietLog(), exit: func(int) { t.Error("exit called") }}
	inner := &recordingLock{holder: "me_1", runner: r}
	lock := &termLock{Interface: inner, term: term}

	// Before leading, reading another holder is the normal campaign.
	inner.holder = "other_2"
	if _, _, err := lock.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	wait := startLead(t, term, r)
	inner.holder = "me_1"
	if _, _, err := lock.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r.returned.Load() {
		t.Fatal("controllers stopped while this replica still holds the lease")
	}
	inner.holder = "other_2"
	if _, _, err := lock.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !r.returned.Load() {
		t.Fatal("controllers still run after a read showed another holder")
	}
	wait()
}
