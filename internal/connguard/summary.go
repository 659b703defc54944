package connguard

import (
	"sync"
	"time"
)

// summary turns a stream of events into at most one log line per interval:
// the first event logs at once, later ones are counted into the next line.
// Events after the last line are not logged (the metrics still count them).
type summary struct {
	every time.Duration

	mu    sync.Mutex
	last  time.Time
	count int
}

// note records one event at now and, when a line is due, returns how many
// events it covers.
func (s *summary) note(now time.Time) (events int, due bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.count++
	if !s.last.IsZero() && now.Sub(s.last) < s.every {
		return 0, false
	}
	events, s.count, s.last = s.count, 0, now
	return events, true
}
