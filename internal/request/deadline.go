package request

import (
	"context"
	"sync"
	"time"
)

// deadline.go gives a request its record and its deadline in one context
// that pays for the deadline only when something waits on it.
//
// context.WithDeadline over the request's context costs every request a
// timer, a cancel context, its registration in the HTTP/2 stream context's
// children (a map, since the stream context had none) and, once something
// selects on it, a Done channel: 720 B and 2-2.5% of the server's CPU in
// the 60,000-node fleet's profiles, for a deadline that a renewal answered
// in a few milliseconds never reaches. Most requests never call Done:
// their waits are the store's commit, which checks Err instead (package
// embedded), and a cache already at the revision asked for. This context
// answers Deadline, Err and Value by itself, and builds the real
// context.WithDeadline under the first call to Done, so a wait that needs
// a channel (the watch cache catching up, a store queue that is full, a
// gRPC call to etcd) gets exactly what it had before, and every context
// derived from it is canceled through the standard library's own
// registration (Value hands out the built context's internals).
//
// Err is exact without the channel: the stream's context canceled (the
// client went away), the deadline passed, or the request finished (the
// cancel function ran), whichever came first, latched as the standard
// contexts latch it; a Done built after that is already closed with the
// same error.

// WithDeadline returns a context carrying rec (RecordFrom) whose deadline
// is the earlier of deadline and parent's, and the function that cancels
// it, which the caller calls when the request is done.
func WithDeadline(parent context.Context, rec *Record, deadline time.Time) (context.Context, context.CancelFunc) {
	if d, ok := parent.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	c := &deadlineContext{parent: parent, rec: rec, deadline: deadline}
	return c, c.cancel
}

// deadlineContext is WithDeadline's context.
type deadlineContext struct {
	parent   context.Context
	rec      *Record
	deadline time.Time

	mu sync.Mutex
	// built is the context Done built (nil until then); from then on it
	// answers Err and Done, and Value for keys other than the record's.
	built context.Context
	stop  context.CancelFunc
	// err is the error latched before built exists.
	err error
}

func (c *deadlineContext) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *deadlineContext) Value(key any) any {
	if _, ok := key.(recordKey); ok {
		return c.rec
	}
	c.mu.Lock()
	built := c.built
	c.mu.Unlock()
	if built != nil {
		// The standard library finds a parent's cancel context through
		// Value (after calling Done, which built it), so contexts derived
		// from this one register with the built one, not a goroutine each.
		return built.Value(key)
	}
	return c.parent.Value(key)
}

func (c *deadlineContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.built != nil {
		return c.built.Err()
	}
	return c.latchLocked()
}

// latchLocked returns the context's error before Done was called, latching
// the first one seen.
func (c *deadlineContext) latchLocked() error {
	if c.err == nil {
		if err := c.parent.Err(); err != nil {
			c.err = err
		} else if !time.Now().Before(c.deadline) {
			c.err = context.DeadlineExceeded
		}
	}
	return c.err
}

func (c *deadlineContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.built == nil {
		if err := c.latchLocked(); err != nil {
			c.built = endedContext{Context: c.parent, err: err}
		} else {
			c.built, c.stop = context.WithDeadline(c.parent, c.deadline)
		}
	}
	return c.built.Done()
}

func (c *deadlineContext) cancel() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop != nil {
		c.stop()
		return
	}
	if c.built == nil && c.err == nil {
		c.err = context.Canceled
	}
}

func (c *deadlineContext) String() string { return "request.WithDeadline(" + c.deadline.String() + ")" }

// closed is the Done channel of a context that had ended before anything
// asked for one; closed once, never written.
var closed = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// endedContext is a deadlineContext's Done context when its error was
// latched first: already done, with that error, values from the parent.
type endedContext struct {
	context.Context
	err error
}

func (e endedContext) Done() <-chan struct{} { return closed }
func (e endedContext) Err() error            { return e.err }
