package bench

import (
	"context"
	"log/slog"
	"maps"
	"sync"
)

// logTally is the fleet agents' log handler. Thousands of agents logging
// every failed request would bury the progress lines, so it forwards only
// the first record of each message at warning level or above (with that
// agent's attributes, so one example of each problem is visible) and counts
// all of them. Info and debug records are dropped before they are built:
// Enabled says no.
type logTally struct {
	next   slog.Handler
	counts *logCounts
}

// logCounts is shared by a handler and every handler derived from it with
// WithAttrs or WithGroup.
type logCounts struct {
	mu    sync.Mutex
	count map[string]uint64
}

func newLogTally(next slog.Handler) *logTally {
	return &logTally{next: next, counts: &logCounts{count: map[string]uint64{}}}
}

// Enabled implements slog.Handler.
func (h *logTally) Enabled(_ context.Context, level slog.Level) bool {
	return level >= slog.LevelWarn
}

// Handle implements slog.Handler.
func (h *logTally) Handle(ctx context.Context, r slog.Record) error {
	key := r.Level.String() + " " + r.Message
	h.counts.mu.Lock()
	h.counts.count[key]++
	first := h.counts.count[key] == 1
	h.counts.mu.Unlock()
	if !first || !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	r.AddAttrs(slog.String("note", "first of its kind; the fleet counts the rest"))
	return h.next.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h *logTally) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logTally{next: h.next.WithAttrs(attrs), counts: h.counts}
}

// WithGroup implements slog.Handler.
func (h *logTally) WithGroup(name string) slog.Handler {
	return &logTally{next: h.next.WithGroup(name), counts: h.counts}
}

// snapshot returns the counts so far, keyed by level and message.
func (h *logTally) snapshot() map[string]uint64 {
	h.counts.mu.Lock()
	defer h.counts.mu.Unlock()
	return maps.Clone(h.counts.count)
}
