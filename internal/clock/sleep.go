// Package clock holds the waiting that Leasehold's background loops share.
package clock

import (
	"context"
	"time"
)

// Sleep waits for d, or until ctx ends, whichever comes first. It reports
// whether the whole of d passed (false: ctx ended first). Unlike
// time.Sleep, a loop that retries with Sleep stops as soon as it is
// cancelled; unlike time.After, it releases its timer at once.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
