package embedded

import "time"

// DefaultCommitSpacing is the Options.CommitSpacing the server uses.
//
// Every batch costs the same whatever it holds: a WAL write and an
// fdatasync (kernel CPU), the wake-ups of the committer and of pebble's WAL
// goroutine, and one event batch for the watch cache and every watcher
// behind it. Without spacing a batch holds the writes that arrived during
// the previous one's fsync (200-400 µs here), so a fleet renewing 10,000
// leases a second made about 1,250 batches a second. With 2 ms, 100,000
// nodes on two shared cores (scripts/bench-rate.sh, 3 minutes, two
// alternating rounds, --register-nodes): batches 17.8 and 15.7 -> 33.9 and
// 32.7 writes on average, server CPU 127.8 and 126.0 -> 118.5 and 116.5
// ms per 1,000 renewals (about 300 µs saved per batch not made), p50 10.9
// and 8.7 -> 6.3 and 5.3 ms (the wait is more than paid back by the CPU it
// frees), p99 58.9 and 55.4 -> 56.2 and 51.3 ms. A write waits at most
// 2 ms more, and only while writes come concurrently.
const DefaultCommitSpacing = 2 * time.Millisecond

// commitSpacer decides how long the committer waits before it gathers the
// next batch, so that with Options.CommitSpacing set batches start at most
// once per spacing while writes come concurrently.
//
// Concurrency is read from the batches themselves: spacing applies only
// after a batch of more than one write. A single writer that waits for each
// answer before its next write (a leader election, a kubectl apply, a test)
// makes batches of one and is never delayed, whatever its rate; with many
// writers, waiting gathers more of them into each batch, and the batches
// stay large enough for spacing to go on applying.
type commitSpacer struct {
	// last is when the previous batch started; lastSize how many writes it
	// held.
	last     time.Time
	lastSize int
}

// wait returns how long to wait, at now, before gathering the next batch.
func (c *commitSpacer) wait(spacing time.Duration, now time.Time) time.Duration {
	if spacing <= 0 || c.lastSize < 2 {
		return 0
	}
	return spacing - now.Sub(c.last)
}

// started records that a batch of size writes started at now.
func (c *commitSpacer) started(now time.Time, size int) {
	c.last, c.lastSize = now, size
}

// sleepUnlessClosing waits d, or until Close begins; it reports false if
// Close began.
func (s *Store) sleepUnlessClosing(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.closing:
		return false
	}
}
