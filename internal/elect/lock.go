package elect

import (
	"context"
	"errors"
	"sync"

	rl "k8s.io/client-go/tools/leaderelection/resourcelock"
)

// trackingLock wraps client-go's LeaseLock to learn what the elector read
// and wrote, without changing what it writes:
//
//   - the fencing token must be the leaseTransitions that this elector wrote
//     when it acquired, compared with the value it replaced (fencing.go);
//   - a release must never clear a lease that someone else holds, and must
//     wait until the command has stopped (see Update);
//   - once it leads, a fresh read naming another holder proves leadership is
//     lost: the command is stopped at once (lostLeadership), instead of
//     when client-go gives up renewing a whole renew deadline later. That
//     is what bounds a resumed, frozen leader's stale run to about one
//     retry period.
//   - before it acquires, the lease watch may end a campaign round so that
//     the next tries at once (campaign.go); wake makes sure that happens
//     only between reads and writes, never after the acquiring write.
//
// The elector calls Get, Create, Update and RecordEvent from the goroutine
// running LeaderElector.Run only; the mutex is for readers in other
// goroutines (the leading goroutine, the event flush and the lease watch).
type trackingLock struct {
	inner rl.Interface
	// stopCommand stops the command as leadership is ending and returns
	// once it has exited; it is called before a release is written and
	// when a read shows another holder after acquisition.
	stopCommand func()
	// endTerm, when set (coordinated election), is called when a read
	// after acquisition shows this elector still holding the lease with a
	// preferredHolder named: the election controller asks it to hand over.
	endTerm func(preferred string)

	// calls is held during every read and acquiring write, so that wake
	// never ends a round in the middle of one (campaign.go).
	calls sync.Mutex

	mu       sync.Mutex
	endRound context.CancelFunc       // ends the running campaign round
	lastGet  *rl.LeaderElectionRecord // record returned by the latest Get
	acquired bool                     // first successful write seen
	acq      acquisition
	// unsure is the latest acquiring write whose answer a cancelled
	// context cut off: the server may have applied it (see releaseUnsure).
	unsure   *rl.LeaderElectionRecord
	recorded int // events handed to the recorder
}

// acquisition describes the write that made this elector the leader.
type acquisition struct {
	created bool // the lease did not exist and was created
	// written is the record the elector wrote; previous the one it
	// replaced (only when !created).
	written, previous rl.LeaderElectionRecord
}

// errForeignRelease refuses a release of a lease this elector does not hold.
var errForeignRelease = errors.New("refusing to release a lease held by another identity")

func newTrackingLock(inner rl.Interface, stopCommand func()) *trackingLock {
	return &trackingLock{inner: inner, stopCommand: stopCommand}
}

func (l *trackingLock) Get(ctx context.Context) (*rl.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.get(ctx)
	l.mu.Lock()
	lost := err == nil && l.acquired && rec.HolderIdentity != l.inner.Identity()
	endOfTerm := err == nil && l.acquired && !lost && rec.PreferredHolder != "" && l.endTerm != nil
	l.mu.Unlock()
	if lost {
		l.stopCommand()
	}
	if endOfTerm {
		l.endTerm(rec.PreferredHolder)
	}
	return rec, raw, err
}

// get reads the record and remembers it, unless the round has ended.
func (l *trackingLock) get(ctx context.Context) (*rl.LeaderElectionRecord, []byte, error) {
	l.calls.Lock()
	defer l.calls.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, nil, err // the round ended (campaign.go)
	}
	rec, raw, err := l.inner.Get(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastGet = nil
	if err == nil {
		cp := *rec
		l.lastGet = &cp
	}
	return rec, raw, err
}

func (l *trackingLock) Create(ctx context.Context, ler rl.LeaderElectionRecord) error {
	l.calls.Lock()
	defer l.calls.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := l.inner.Create(ctx, ler); err != nil {
		l.noteUnsure(ctx, ler)
		return err
	}
	l.noteWrite(ler, true)
	return nil
}

// Update passes renewals and takeovers through. A release (client-go
// writes an empty holder) first stops the command, because releasing lets
// another candidate start at once. It is refused when the Get that
// client-go made just before shows another holder: client-go (v0.37)
// decides from its cached observation, not that fresh Get, whether it
// still leads, so after losing the lease it would otherwise clear the new
// leader's holderIdentity with a perfectly valid resourceVersion.
func (l *trackingLock) Update(ctx context.Context, ler rl.LeaderElectionRecord) error {
	if ler.HolderIdentity == "" {
		l.mu.Lock()
		last := l.lastGet
		l.mu.Unlock()
		if last == nil || last.HolderIdentity != l.inner.Identity() {
			return errForeignRelease
		}
		l.stopCommand()
		// Stopping the command may have outlived the caller's deadline;
		// the release is still worth writing, and the resourceVersion
		// read by that Get guarantees it only lands if nobody wrote since.
		if ctx.Err() != nil {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
			defer cancel()
		}
		return l.inner.Update(ctx, ler)
	}
	l.calls.Lock()
	defer l.calls.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := l.inner.Update(ctx, ler); err != nil {
		l.noteUnsure(ctx, ler)
		return err
	}
	l.noteWrite(ler, false)
	return nil
}

func (l *trackingLock) noteWrite(written rl.LeaderElectionRecord, created bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.acquired {
		return
	}
	l.acquired = true
	l.acq = acquisition{created: created, written: written}
	if !created && l.lastGet != nil {
		l.acq.previous = *l.lastGet
	}
}

// startRound records how to end the campaign round that starts now.
func (l *trackingLock) startRound(end context.CancelFunc) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.endRound = end
}

// wake ends the running campaign round, so that the next one tries at
// once, unless this elector has acquired: leadership is never cut short
// by the watch. It waits for a read or write in flight, so that a round
// never ends between a write reaching the server and its success being
// recorded (the write after a wake fails on the ended round's context
// before it is sent).
func (l *trackingLock) wake() {
	if _, acquired := l.acquisitionRecord(); acquired {
		return
	}
	l.calls.Lock()
	defer l.calls.Unlock()
	l.mu.Lock()
	end, acquired := l.endRound, l.acquired
	l.mu.Unlock()
	if !acquired && end != nil {
		end()
	}
}

// acquisitionRecord reports the acquiring write, if there was one.
func (l *trackingLock) acquisitionRecord() (acquisition, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acq, l.acquired
}

func (l *trackingLock) RecordEvent(s string) {
	l.mu.Lock()
	l.recorded++
	l.mu.Unlock()
	l.inner.RecordEvent(s)
}

func (l *trackingLock) recordedEvents() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.recorded
}

func (l *trackingLock) Identity() string { return l.inner.Identity() }
func (l *trackingLock) Describe() string { return l.inner.Describe() }
