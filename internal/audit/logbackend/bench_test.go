package logbackend

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkWrite is the cost of one Metadata-sized event written to a file
// in blocking mode (what a request pays) and queued in batch mode.
func BenchmarkWrite(b *testing.B) {
	for _, mode := range []string{ModeBlocking, ModeBatch} {
		b.Run(mode, func(b *testing.B) {
			be, err := New(Options{Path: filepath.Join(b.TempDir(), "audit.log"), Mode: mode, BufferSize: 1 << 20})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); be.Run(ctx) }()
			ev := event(1, 600)
			b.ReportAllocs()
			for b.Loop() {
				be.ProcessEvents(ev)
			}
			b.StopTimer()
			cancel()
			<-done
			be.Close()
		})
	}
}
