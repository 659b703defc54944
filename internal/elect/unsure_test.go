package elect

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"
)

// storedLock is a resource lock over one stored record. Its writes apply;
// lose makes the next write apply and then wait for its context to end
// and return that error, as a request the server applied but whose answer
// a cancelled client abandoned.
type storedLock struct {
	rec     *rl.LeaderElectionRecord
	lose    bool
	writing chan struct{} // closed when a lost write has applied
	writes  []rl.LeaderElectionRecord
}

func (s *storedLock) Get(context.Context) (*rl.LeaderElectionRecord, []byte, error) {
	cp := *s.rec
	return &cp, []byte("{}"), nil
}

func (s *storedLock) write(ctx context.Context, ler rl.LeaderElectionRecord) error {
	// The lease keeps microseconds, as the API server stores MicroTime.
	ler.AcquireTime = metav1.NewTime(ler.AcquireTime.Truncate(time.Microsecond))
	ler.RenewTime = metav1.NewTime(ler.RenewTime.Truncate(time.Microsecond))
	s.rec = &ler
	s.writes = append(s.writes, ler)
	if s.lose {
		s.lose = false
		close(s.writing)
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (s *storedLock) Create(ctx context.Context, ler rl.LeaderElectionRecord) error {
	return s.write(ctx, ler)
}
func (s *storedLock) Update(ctx context.Context, ler rl.LeaderElectionRecord) error {
	return s.write(ctx, ler)
}
func (s *storedLock) RecordEvent(string) {}
func (s *storedLock) Identity() string   { return "me" }
func (s *storedLock) Describe() string   { return "test/lease" }

// takeover is the record a candidate writes to take a released lease.
func takeover() rl.LeaderElectionRecord {
	now := metav1.NewTime(time.Now())
	return rl.LeaderElectionRecord{HolderIdentity: "me", LeaseDurationSeconds: 15, AcquireTime: now, RenewTime: now, LeaderTransitions: 4}
}

// loseTakeover runs an acquiring Update through l that inner applies but
// whose answer is cut off by cancelling its context, as a signal does.
func loseTakeover(t *testing.T, l *trackingLock, inner *storedLock) {
	t.Helper()
	inner.lose, inner.writing = true, make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() { got <- l.Update(ctx, takeover()) }()
	<-inner.writing
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("Update whose answer was lost: %v, want context.Canceled", err)
	}
	if _, acquired := l.acquisitionRecord(); acquired {
		t.Fatal("a write without an answer counted as an acquisition")
	}
}

func TestReleaseUnsureUndoesAnUnansweredTakeover(t *testing.T) {
	inner := &storedLock{rec: &rl.LeaderElectionRecord{LeaderTransitions: 3, LeaseDurationSeconds: 1}}
	l := newTrackingLock(inner, func() { t.Error("no command ran: nothing to stop") })
	loseTakeover(t, l, inner)
	released, err := l.releaseUnsure(context.Background())
	if err != nil || !released {
		t.Fatalf("releaseUnsure = %v, %v; want a release", released, err)
	}
	if got := *inner.rec; got.HolderIdentity != "" || got.LeaseDurationSeconds != 1 || got.LeaderTransitions != 4 {
		t.Errorf("lease after the release: %+v; want no holder, duration 1, the takeover's transitions 4", got)
	}
	// Done once: a second call finds nothing of its own to undo.
	if released, err := l.releaseUnsure(context.Background()); released || err != nil {
		t.Errorf("second releaseUnsure = %v, %v; want nothing", released, err)
	}
}

func TestReleaseUnsureLeavesALeaseThatMovedOn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after func(*rl.LeaderElectionRecord)
	}{
		{"taken by another", func(r *rl.LeaderElectionRecord) { r.HolderIdentity = "other"; r.LeaderTransitions++ }},
		{"renewed since", func(r *rl.LeaderElectionRecord) { r.RenewTime = metav1.NewTime(r.RenewTime.Add(time.Second)) }},
		{"released", func(r *rl.LeaderElectionRecord) { r.HolderIdentity = "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := &storedLock{rec: &rl.LeaderElectionRecord{LeaderTransitions: 3}}
			l := newTrackingLock(inner, func() {})
			loseTakeover(t, l, inner)
			tc.after(inner.rec)
			want := *inner.rec
			if released, err := l.releaseUnsure(context.Background()); released || err != nil {
				t.Errorf("releaseUnsure = %v, %v; want the lease left alone", released, err)
			}
			if *inner.rec != want {
				t.Errorf("lease changed to %+v, want %+v", *inner.rec, want)
			}
		})
	}
}

func TestReleaseUnsureIgnoresAnsweredWrites(t *testing.T) {
	// A write the server refused (its context still live) is no doubt.
	refused := &stepLock{entered: make(chan string, 1), proceed: make(chan error, 1)}
	l := newTrackingLock(refused, func() {})
	refused.proceed <- errors.New("conflict")
	if err := l.Update(context.Background(), takeover()); err == nil {
		t.Fatal("the refused write succeeded")
	}
	if released, err := l.releaseUnsure(context.Background()); released || err != nil || refused.calls != 1 {
		t.Errorf("releaseUnsure after a refused write = %v, %v with %d calls; want nothing read or written", released, err, refused.calls)
	}

	// An unanswered write followed by an acquisition: the elector leads,
	// and its own release path applies.
	inner := &storedLock{rec: &rl.LeaderElectionRecord{}}
	l = newTrackingLock(inner, func() {})
	loseTakeover(t, l, inner)
	if err := l.Update(context.Background(), takeover()); err != nil {
		t.Fatal(err)
	}
	writes := len(inner.writes)
	if released, err := l.releaseUnsure(context.Background()); released || err != nil || len(inner.writes) != writes {
		t.Errorf("releaseUnsure after acquiring = %v, %v; want no write", released, err)
	}
}
