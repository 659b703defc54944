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
}

func (s *stallLog) listener() *pebble.EventListener {
	return &pebble.EventListener{
		BackgroundError: func(err error) {
			s.log.Error("pebble background error", "err", err)
		},
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
