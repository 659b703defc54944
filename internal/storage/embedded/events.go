package embedded

import (
	"log/slog"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// stallLog reports pebble's write stalls and slow disk operations. Without
// it they are invisible: a stall holds the committer, and with it every
// writer, and only shows up as a latency tail.
type stallLog struct {
	log *slog.Logger

	mu    sync.Mutex
	since time.Time // start of the current write stall; zero when none
	// lastBackground is when a background error was last logged, and
	// suppressed how many were not since: pebble retries a failing flush
	// at once, and on a full disk that is thousands of errors a second.
	lastBackground time.Time
	suppressed     int
}

// backgroundLogEvery is the most often a pebble background error is logged.
const backgroundLogEvery = 10 * time.Second

func (s *stallLog) backgroundError(err error) {
	s.mu.Lock()
	if now := time.Now(); now.Sub(s.lastBackground) < backgroundLogEvery {
		s.suppressed++
		s.mu.Unlock()
		return
	} else {
		s.lastBackground = now
	}
	n := s.suppressed
	s.suppressed = 0
	s.mu.Unlock()
	s.log.Error("pebble background error", "err", err, "suppressedSinceLast", n)
}

func (s *stallLog) listener() *pebble.EventListener {
	return &pebble.EventListener{
		BackgroundError: s.backgroundError,
		DiskSlow: func(info pebble.DiskSlowInfo) {
			s.log.Warn("slow disk operation", "path", info.Path,
				"op", info.OpType.String(), "duration", info.Duration.String())
		},
		WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
			s.mu.Lock()
			s.since = time.Now()
			s.mu.Unlock()
			s.log.Warn("write stall: writes wait for pebble", "reason", info.Reason)
		},
		WriteStallEnd: func() {
			s.mu.Lock()
			d := time.Since(s.since)
			s.since = time.Time{}
			s.mu.Unlock()
			s.log.Warn("write stall ended", "duration", d.String())
		},
	}
}
