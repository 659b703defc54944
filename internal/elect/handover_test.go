package elect

import (
	"context"
	"errors"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
)

func TestAcquirableNow(t *testing.T) {
	lease := func(holder *string) *coordinationv1.Lease {
		return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: holder, LeaseDurationSeconds: ptr.To[int32](1)}}
	}
	for _, tc := range []struct {
		name        string
		holder      *string
		coordinated bool
		want        bool
	}{
		{"released", ptr.To(""), false, true},
		{"never held", nil, false, true},
		{"held by another", ptr.To("other"), false, false},
		{"names us", ptr.To("me"), false, true},
		{"coordinated, released", ptr.To(""), true, false}, // only the controller hands it out
		{"coordinated, elected", ptr.To("me"), true, true},
		{"coordinated, held by another", ptr.To("other"), true, false},
	} {
		if got := acquirableNow(lease(tc.holder), "me", tc.coordinated); got != tc.want {
			t.Errorf("%s: acquirableNow = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// stepLock is a resource lock whose calls block until the test lets them
// return, counting the calls that reached it.
type stepLock struct {
	entered chan string // the name of each call as it starts
	proceed chan error  // what the call returns
	calls   int
}

func newStepLock() *stepLock {
	return &stepLock{entered: make(chan string, 1), proceed: make(chan error)}
}

func (s *stepLock) step(name string) error {
	s.calls++
	s.entered <- name
	return <-s.proceed
}

func (s *stepLock) Get(context.Context) (*rl.LeaderElectionRecord, []byte, error) {
	if err := s.step("get"); err != nil {
		return nil, nil, err
	}
	return &rl.LeaderElectionRecord{HolderIdentity: ""}, []byte("{}"), nil
}
func (s *stepLock) Create(context.Context, rl.LeaderElectionRecord) error { return s.step("create") }
func (s *stepLock) Update(context.Context, rl.LeaderElectionRecord) error { return s.step("update") }
func (s *stepLock) RecordEvent(string)                                    {}
func (s *stepLock) Identity() string                                      { return "me" }
func (s *stepLock) Describe() string                                      { return "test/lease" }

// roundEnded reports whether cancel was called, waiting up to d.
func roundEnded(ctx context.Context, d time.Duration) bool {
	if ctx.Err() != nil {
		return true
	}
	select {
	case <-ctx.Done():
		return true
	case <-time.After(d):
		return false
	}
}

func TestWakeWaitsForCallInFlight(t *testing.T) {
	inner := newStepLock()
	l := newTrackingLock(inner, func() {})
	ctx, end := context.WithCancel(context.Background())
	defer end()
	l.startRound(end)

	got := make(chan error, 1)
	go func() { _, _, err := l.Get(ctx); got <- err }()
	<-inner.entered
	woken := make(chan struct{})
	go func() { l.wake(); close(woken) }()
	if roundEnded(ctx, 100*time.Millisecond) {
		t.Fatal("wake ended the round while a read was in flight")
	}
	inner.proceed <- nil
	if err := <-got; err != nil {
		t.Fatalf("Get: %v", err)
	}
	<-woken
	if !roundEnded(ctx, 0) {
		t.Fatal("wake did not end the round after the read")
	}
	// The ended round's write never reaches the server.
	if err := l.Update(ctx, rl.LeaderElectionRecord{HolderIdentity: "me"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Update in an ended round: %v, want context.Canceled", err)
	}
	if inner.calls != 1 {
		t.Errorf("%d calls reached the lock, want 1 (the read)", inner.calls)
	}
	if _, acquired := l.acquisitionRecord(); acquired {
		t.Error("acquired without a write")
	}
}

func TestWakeNeverEndsLeadership(t *testing.T) {
	inner := newStepLock()
	l := newTrackingLock(inner, func() {})
	ctx, end := context.WithCancel(context.Background())
	defer end()
	l.startRound(end)

	// A wake arriving during the acquiring write waits for it, then sees
	// the acquisition and leaves the round (now the leader's) alone.
	got := make(chan error, 1)
	go func() { got <- l.Update(ctx, rl.LeaderElectionRecord{HolderIdentity: "me", LeaderTransitions: 1}) }()
	<-inner.entered
	woken := make(chan struct{})
	go func() { l.wake(); close(woken) }()
	inner.proceed <- nil
	if err := <-got; err != nil {
		t.Fatalf("Update: %v", err)
	}
	<-woken
	l.wake()
	if roundEnded(ctx, 50*time.Millisecond) {
		t.Fatal("wake ended the round after the acquiring write")
	}
	if acq, ok := l.acquisitionRecord(); !ok || acq.written.LeaderTransitions != 1 {
		t.Errorf("acquisition %+v, %v; want the write with transitions 1", acq, ok)
	}
}

func TestWakeBeforeAnyCall(t *testing.T) {
	inner := newStepLock()
	l := newTrackingLock(inner, func() {})
	ctx, end := context.WithCancel(context.Background())
	defer end()
	l.wake() // no round yet: nothing to end
	l.startRound(end)
	l.wake()
	if !roundEnded(ctx, 0) {
		t.Fatal("wake did not end an idle round")
	}
	// A failed write is no acquisition: a later wake still ends rounds.
	ctx2, end2 := context.WithCancel(context.Background())
	defer end2()
	l.startRound(end2)
	go func() {
		<-inner.entered
		inner.proceed <- apierrors.NewConflict(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "lease", errors.New("changed"))
	}()
	if err := l.Update(ctx2, rl.LeaderElectionRecord{HolderIdentity: "me"}); !apierrors.IsConflict(err) {
		t.Fatalf("Update: %v, want the conflict", err)
	}
	l.wake()
	if !roundEnded(ctx2, 0) {
		t.Fatal("wake did not end the round after a failed write")
	}
}
