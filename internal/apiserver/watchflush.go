package apiserver

import "time"

// DefaultWatchFlushInterval is how close together a watch stream's
// flushes may come (Config.WatchFlushInterval).
//
// Why: a stream flushed after every event it writes (kube-apiserver does,
// whenever no further event is waiting) sends one HTTP/2 DATA frame, one
// TLS record and one write system call per event, and its client pays a
// read and a record's decryption for each. Events mostly arrive one at a
// time (a fleet's renewals spread over their period), so at 2,000
// renewals/s a watcher of node leases (the dashboard, a node lifecycle
// controller) made about 2,000 reads a second and spent a quarter of its
// CPU there. A stream instead flushes at once when its last flush is at
// least this long ago, and otherwise when this long has passed since it:
// a lone event is not delayed, and a busy stream carries every event
// within the interval in one frame. 5 ms is well under what a watcher
// could notice (a lease's renewal is watched on a scale of seconds), and
// at 2,000 events/s makes one frame of about ten events.
//
// Measured (2026-11-27): BenchmarkWatchDelivery, a client-go watch at
// 2,000 renewals/s, went from 0.93-0.97 socket reads per event to
// 0.13-0.20; scripts/dashboard-cost.sh, the dashboard at 2,000 renewals/s,
// from 64-68 to 31.5-34.3 CPU-µs per renewal shown.
const DefaultWatchFlushInterval = 5 * time.Millisecond

// flushPacer decides when a watch stream flushes (see
// DefaultWatchFlushInterval). It belongs to one stream's goroutine.
type flushPacer struct {
	interval time.Duration
	last     time.Time
	timer    *time.Timer
	// armed: the timer runs for frames written and not yet flushed.
	armed bool
}

func newFlushPacer(interval time.Duration) *flushPacer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &flushPacer{interval: interval, timer: t}
}

// due reports whether the frames written so far are to be flushed now;
// if not, it arms the timer (once) for when they are.
func (p *flushPacer) due(now time.Time) bool {
	if p.interval <= 0 {
		return true
	}
	wait := p.interval - now.Sub(p.last)
	if wait <= 0 {
		return true
	}
	if !p.armed {
		p.timer.Reset(wait)
		p.armed = true
	}
	return false
}

// C fires when frames written earlier are due; nil while nothing waits.
func (p *flushPacer) C() <-chan time.Time {
	if !p.armed {
		return nil
	}
	return p.timer.C
}

// flushed notes a flush at now, disarming the timer.
func (p *flushPacer) flushed(now time.Time) {
	p.last = now
	if p.armed {
		p.timer.Stop()
		p.armed = false
	}
}

// stop releases the timer.
func (p *flushPacer) stop() { p.timer.Stop() }
