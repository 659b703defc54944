package elect

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"
)

// A signal cancels the election while a candidate's acquiring write may be
// in flight. The write's request is then abandoned, but the server may
// already have applied it: client-go sees only the cancellation, never
// leads, and so never releases, and the departing elector leaves the lease
// held for a whole lease duration, blocking every other candidate. (The
// end-to-end failover test saw a released lease taken again this way, by an
// elector stopped in the same moment as the leader.) The lock remembers
// such a write, and the elector, once the campaign is over without
// leadership, checks the lease and releases what that write took.

// noteUnsure remembers ler, the acquiring write that just failed, when it
// failed because ctx ended: its outcome is unknown.
func (l *trackingLock) noteUnsure(ctx context.Context, ler rl.LeaderElectionRecord) {
	if ctx.Err() == nil {
		return // the server answered: the write did not happen
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.unsure = &ler
}

// releaseUnsure releases the lease when it holds exactly the acquiring
// write whose answer was lost (noteUnsure), and this elector never learned
// it had acquired. A lease that moved on since (renewed, taken, released)
// is left alone: only the unsure write itself is undone, with the
// resourceVersion of the read that found it, so a write in between makes
// the release fail instead of clearing someone else's lease. It reports
// whether it released.
func (l *trackingLock) releaseUnsure(ctx context.Context) (bool, error) {
	l.mu.Lock()
	w, acquired := l.unsure, l.acquired
	l.mu.Unlock()
	if w == nil || acquired {
		return false, nil
	}
	rec, _, err := l.inner.Get(ctx)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the lease after an unanswered acquiring write: %w", err)
	}
	if !sameRecord(*rec, *w) {
		return false, nil
	}
	now := metav1.NewTime(time.Now())
	// What client-go's own release writes: no holder, one-second duration.
	release := rl.LeaderElectionRecord{
		LeaderTransitions:    rec.LeaderTransitions,
		LeaseDurationSeconds: 1,
		AcquireTime:          now,
		RenewTime:            now,
	}
	if err := l.inner.Update(ctx, release); err != nil {
		return false, fmt.Errorf("release the lease an unanswered acquiring write took: %w", err)
	}
	return true, nil
}

// sameRecord tells whether the stored record got is the written one, w.
// The lease keeps times to the microsecond, the record in memory to the
// nanosecond.
func sameRecord(got, w rl.LeaderElectionRecord) bool {
	same := func(a, b metav1.Time) bool { return a.Truncate(time.Microsecond).Equal(b.Truncate(time.Microsecond)) }
	return got.HolderIdentity == w.HolderIdentity && got.LeaderTransitions == w.LeaderTransitions &&
		got.LeaseDurationSeconds == w.LeaseDurationSeconds &&
		same(got.AcquireTime, w.AcquireTime) && same(got.RenewTime, w.RenewTime)
}
