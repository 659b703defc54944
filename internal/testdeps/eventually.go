package testdeps

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Condition is what Eventually polls: a check that fails with an error, one
// that answers yes or no, one that answers yes or no or cannot tell (an
// error, which ends the wait at once), or one that needs a context for its
// requests.
type Condition interface {
	func() error | func() bool | func() (bool, error) | func(context.Context) error
}

// AttemptTimeout bounds one call of a func(context.Context) error condition:
// its context ends after this long, so a request that hangs is retried.
const AttemptTimeout = 5 * time.Second

// Eventually calls cond until it holds, pausing every between calls, and
// fails t, naming what, once within has passed without it. It returns how
// long it waited.
//
// cond holds when a func() error or func(context.Context) error returns nil
// (the last error is reported on failure), or when a func() bool or func()
// (bool, error) returns true; an error from func() (bool, error) fails t at
// once, without waiting for the rest of within.
func Eventually[C Condition](t testing.TB, within, every time.Duration, what string, cond C) time.Duration {
	t.Helper()
	check := condition(cond)
	start := time.Now()
	deadline := start.Add(within)
	for {
		ok, err := check()
		var fatal *fatalError
		if errors.As(err, &fatal) {
			t.Fatalf("%s: %v", what, fatal.err)
		}
		if ok {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			if err != nil {
				t.Fatalf("%s: not within %v: %v", what, within, err)
			}
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(every)
	}
}

// fatalError is a func() (bool, error) condition's error: it ends the wait.
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }

// condition turns any Condition into one form: whether it holds, and the
// error to report (a *fatalError when the wait must end at once).
func condition[C Condition](cond C) func() (bool, error) {
	switch c := any(cond).(type) {
	case func() error:
		return func() (bool, error) {
			err := c()
			return err == nil, err
		}
	case func() bool:
		return func() (bool, error) { return c(), nil }
	case func() (bool, error):
		return func() (bool, error) {
			ok, err := c()
			if err != nil {
				return false, &fatalError{err}
			}
			return ok, nil
		}
	case func(context.Context) error:
		return func() (bool, error) {
			ctx, cancel := context.WithTimeout(context.Background(), AttemptTimeout)
			defer cancel()
			err := c(ctx)
			return err == nil, err
		}
	}
	panic("unreachable: Condition has four forms")
}
