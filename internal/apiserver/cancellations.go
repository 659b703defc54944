package apiserver

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
)

// StatusClientClosedRequest is the code a request's record gets when its
// client abandoned it (closed the connection, reset the HTTP/2 stream)
// before the answer, whatever error the handler met as a result: the
// answer reaches nobody, and counted as the 500 or 504 it would have been,
// a rapid-reset flood faked a server error rate. The number is nginx's
// "client closed request"; it is never sent (there is no one to send it
// to), only recorded, and ObserveMetrics counts it apart.
const StatusClientClosedRequest = 499

// cancellationSummaryEvery bounds the log lines about cancellations: one
// summary an interval, however many clients give up (a flood of resets
// wrote 100 MB of ERROR lines in 30 s when each was logged).
const cancellationSummaryEvery = time.Minute

// cancellationLog counts cancellations and logs them as one summary line an
// interval, written by the first cancellation after the interval ends (no
// goroutine of its own). The zero value is ready.
type cancellationLog struct {
	count    atomic.Int64
	lastNano atomic.Int64
}

// note records one cancellation and logs the summary when one is due.
func (c *cancellationLog) note(logger *slog.Logger, now time.Time) {
	c.count.Add(1)
	last := c.lastNano.Load()
	if now.UnixNano()-last < int64(cancellationSummaryEvery) || !c.lastNano.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	logger.Info("requests cancelled by their clients", "count", c.count.Swap(0), "since", time.Unix(0, last))
}

// clientGone tells whether ctx, a request's, ended because its client left
// (rather than by a server-side deadline).
func clientGone(ctx context.Context) bool {
	return ctx.Err() == context.Canceled
}
