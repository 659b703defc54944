package testdeps

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestEventuallyTakesEveryForm(t *testing.T) {
	calls := 0
	third := func() bool { calls++; return calls >= 3 }
	if took := Eventually(t, time.Second, time.Millisecond, "third call", third); took <= 0 {
		t.Errorf("waited %v, want more than nothing", took)
	}
	if calls != 3 {
		t.Errorf("cond called %d times, want 3", calls)
	}
	n := 0
	Eventually(t, time.Second, time.Millisecond, "error form", func() error {
		if n++; n < 2 {
			return errors.New("not yet")
		}
		return nil
	})
	Eventually(t, time.Second, time.Millisecond, "(bool, error) form", func() (bool, error) { return true, nil })
	Eventually(t, time.Second, time.Millisecond, "context form", func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			return errors.New("no deadline")
		}
		return nil
	})
}
