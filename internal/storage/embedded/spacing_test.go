package embedded

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"
)

func TestCommitSpacerWaitsOnlyAfterABatchOfSeveral(t *testing.T) {
	const spacing = 10 * time.Millisecond
	t0 := time.Now()
	var c commitSpacer
	if w := c.wait(spacing, t0); w != 0 {
		t.Errorf("before any batch: wait %s, want 0", w)
	}
	c.started(t0, 1)
	if w := c.wait(spacing, t0.Add(time.Millisecond)); w != 0 {
		t.Errorf("after a batch of one: wait %s, want 0", w)
	}
	c.started(t0, 2)
	if w := c.wait(spacing, t0.Add(3*time.Millisecond)); w != 7*time.Millisecond {
		t.Errorf("3ms after a batch of two: wait %s, want 7ms", w)
	}
	if w := c.wait(spacing, t0.Add(spacing)); w > 0 {
		t.Errorf("a spacing after a batch of two: wait %s, want none", w)
	}
	if w := c.wait(0, t0); w != 0 {
		t.Errorf("spacing off: wait %s, want 0", w)
	}
}

// spacedStore is a store with CommitSpacing whose committer stops at its
// first batch until release is called (entered is closed then), and which
// records every batch's size and start.
type spacedStore struct {
	*Store
	entered <-chan struct{}
	release func()

	mu      sync.Mutex
	batches []spacedBatch
}

type spacedBatch struct {
	size  int
	start time.Time
}

func openSpaced(t *testing.T, spacing time.Duration) *spacedStore {
	t.Helper()
	ss := &spacedStore{}
	ss.Store, ss.entered, ss.release = holdFirstBatch(t, Options{
		Logger:        slog.New(slog.DiscardHandler),
		CommitSpacing: spacing,
		OnCommit: func(n int, d time.Duration) {
			ss.mu.Lock()
			ss.batches = append(ss.batches, spacedBatch{size: n, start: time.Now().Add(-d)})
			ss.mu.Unlock()
		},
	})
	return ss
}

func (ss *spacedStore) recorded() []spacedBatch {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return append([]spacedBatch(nil), ss.batches...)
}

// oneThenSeveral commits a batch of one write (held), then one of several
// (the writes queued meanwhile), and returns when both are durable.
func (ss *spacedStore) oneThenSeveral(t *testing.T, ctx context.Context) {
	t.Helper()
	const queued = 3
	first, errs := holdOneQueueMore(ctx, t, ss.Store, ss.entered, queued)
	ss.release()
	for range queued + 1 {
		var err error
		select {
		case err = <-first:
		case err = <-errs:
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	b := ss.recorded()
	if len(b) != 2 || b[0].size != 1 || b[1].size != queued {
		t.Fatalf("batches %+v, want one of 1 then one of %d", b, queued)
	}
}

// After a batch of several writes the next batch starts no sooner than the
// spacing after it; after a batch of one, a write is committed at once, so
// a writer that waits for each answer is never slowed.
func TestCommitSpacingAfterConcurrentWritesOnly(t *testing.T) {
	const spacing = 2 * time.Second
	ctx := testCtx(t)
	ss := openSpaced(t, spacing)
	ss.oneThenSeveral(t, ctx)

	if _, err := ss.Create(ctx, "/k/spaced", []byte("v")); err != nil {
		t.Fatal(err)
	}
	b := ss.recorded()
	if gap := b[2].start.Sub(b[1].start); gap < spacing-time.Millisecond {
		t.Errorf("the batch after one of %d writes started %s after it, want at least %s", b[1].size, gap, spacing)
	}

	// The batch just written held one write: the next ones are not delayed.
	start := time.Now()
	for i := range 5 {
		if _, err := ss.Create(ctx, fmt.Sprintf("/k/alone-%d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took > spacing/2 {
		t.Errorf("5 writes one after another took %s: a lone writer was spaced (spacing %s)", took, spacing)
	}
}

// A committer waiting out the spacing stops when the store closes: the
// write it holds is answered ErrClosed (it was never written) and Close
// does not wait for the spacing.
func TestCommitSpacingEndsWithClose(t *testing.T) {
	const spacing = time.Minute
	ctx := testCtx(t)
	ss := openSpaced(t, spacing)
	ss.oneThenSeveral(t, ctx)

	held := make(chan error, 1)
	go func() {
		_, err := ss.Create(ctx, "/k/held", []byte("v"))
		held <- err
	}()
	// The committer takes the write and waits out the spacing (were the
	// write still queued, it would be answered ErrClosed all the same, but
	// Close would not have a committer's wait to cut short).
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	if err := ss.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Close took %s with the committer waiting out a %s spacing", took, spacing)
	}
	wantErrClosed(t, held, "the held write")
	if got := len(ss.recorded()); got != 2 {
		t.Errorf("%d batches committed, want 2: the held write was committed", got)
	}
}

func TestNegativeCommitSpacingIsRefused(t *testing.T) {
	if _, err := Open(t.TempDir(), Options{CommitSpacing: -time.Millisecond}); err == nil {
		t.Fatal("Open accepted a negative CommitSpacing")
	}
}
