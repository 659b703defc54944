package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// heldCommitter opens a store whose committer, at its first batch, stops
// in OnCommit until release is called; entered is closed once it stopped.
func heldCommitter(t *testing.T, maxBatch int) (s *Store, entered <-chan struct{}, release func()) {
	t.Helper()
	return holdFirstBatch(t, Options{Logger: slog.New(slog.DiscardHandler), MaxBatch: maxBatch})
}

// holdFirstBatch opens a store with opts whose committer, at its first
// batch, stops after opts.OnCommit (if any) until release is called;
// entered is closed once it stopped.
func holdFirstBatch(t *testing.T, opts Options) (s *Store, entered <-chan struct{}, release func()) {
	t.Helper()
	in, hold := make(chan struct{}), make(chan struct{})
	var first sync.Once
	onCommit := opts.OnCommit
	opts.OnCommit = func(n int, d time.Duration) {
		if onCommit != nil {
			onCommit(n, d)
		}
		first.Do(func() {
			close(in)
			<-hold
		})
	}
	s, err := Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { close(hold) }) }
	t.Cleanup(func() {
		release()
		_ = s.Close()
	})
	return s, in, release
}

// wantErrClosed waits up to 10 s for a write's error from errc and fails
// unless it is ErrClosed; what names the write.
func wantErrClosed(t *testing.T, errc <-chan error, what string) {
	t.Helper()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("%s answered %v, want ErrClosed", what, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s is still waiting after Close", what)
	}
}

// waitQueued waits until n writes are queued for the committer.
func waitQueued(t *testing.T, s *Store, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(s.reqs) < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes queued, want %d", len(s.reqs), n)
		}
	}
}

// holdOneQueueMore starts a create that the held committer takes (it
// returns once the committer holds it) and n more that queue behind it, and
// returns the channels their answers come on.
func holdOneQueueMore(ctx context.Context, t *testing.T, s *Store, entered <-chan struct{}, n int) (first, queued <-chan error) {
	t.Helper()
	f := make(chan error, 1)
	go func() {
		_, err := s.Create(ctx, "/k/first", []byte("v"))
		f <- err
	}()
	<-entered
	q := make(chan error, n)
	for i := range n {
		go func() {
			_, err := s.Create(ctx, fmt.Sprintf("/k/queued-%d", i), []byte("v"))
			q <- err
		}()
	}
	waitQueued(t, s, n)
	return f, q
}

// Writes still queued when the store closes are answered ErrClosed by
// their writers, none left waiting, and none written.
func TestQueuedWritesEndWithTheCommitter(t *testing.T) {
	ctx := testCtx(t)
	s, entered, release := heldCommitter(t, 8)
	const queued = 5
	first, errs := holdOneQueueMore(ctx, t, s, entered, queued)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	<-s.closing
	release()
	if err := <-first; err != nil {
		t.Fatalf("the write the committer had taken: %v", err)
	}
	for range queued {
		wantErrClosed(t, errs, "a queued write")
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

// A queued write whose deadline passes is answered with it by the
// committer; a write that finds the queue full waits on its context and
// gives up at its deadline by itself.
func TestQueuedWritesKeepTheirDeadlines(t *testing.T) {
	ctx := testCtx(t)
	s, entered, release := heldCommitter(t, 1)
	go func() { _, _ = s.Create(ctx, "/k/first", []byte("v")) }()
	<-entered
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	queuedErr := make(chan error, 1)
	go func() {
		_, err := s.Create(short, "/k/queued", []byte("v"))
		queuedErr <- err
	}()
	waitQueued(t, s, 1)
	start := time.Now()
	if _, err := s.Create(short, "/k/waiting", []byte("v")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a write finding the queue full: %v, want its deadline", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("a write finding the queue full gave up after %v", waited)
	}
	select {
	case err := <-queuedErr:
		t.Fatalf("the queued write answered %v while the committer was held", err)
	default:
	}
	release()
	if err := <-queuedErr; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the queued write answered %v, want its deadline", err)
	}
	for _, key := range []string{"/k/queued", "/k/waiting"} {
		if kv, err := s.Get(ctx, key); err == nil {
			t.Fatalf("%s was written at %d after its deadline", key, kv.ModRevision)
		}
	}
}

// doneCounter counts the calls to its Done.
type doneCounter struct {
	context.Context
	calls atomic.Int64
}

func (c *doneCounter) Done() <-chan struct{} {
	c.calls.Add(1)
	return c.Context.Done()
}

// A write that finds room in the queue never asks its context for Done,
// which is what an API request's deadline costs (request.WithDeadline).
func TestWritesDoNotAskForDoneWhileTheQueueHasRoom(t *testing.T) {
	s := openTest(t, Options{})
	ctx := &doneCounter{Context: testCtx(t)}
	rev, err := s.Create(ctx, "/k/a", []byte("v0"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if rev, err = s.Update(ctx, "/k/a", rev, fmt.Appendf(nil, "v%d", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if n := ctx.calls.Load(); n != 0 {
		t.Fatalf("101 writes asked for Done %d times", n)
	}
}
