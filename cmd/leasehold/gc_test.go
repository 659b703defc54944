package main

import (
	"context"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"
	"testing"
)

func TestStartServeGCRefusesBadHeadroom(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, v := range []string{"lots", "-1Mi"} {
		if _, err := startServeGC(context.Background(), log, v); err == nil || !strings.Contains(err.Error(), "--max-heap-headroom") {
			t.Errorf("--max-heap-headroom %s: error %v, want one naming the flag", v, err)
		}
	}
}

// TestStartServeGCSetsTargetUnlessGOGC: without GOGC, serve's target is
// set (and tuned until the context ends); with GOGC, nothing is changed.
func TestStartServeGCSetsTargetUnlessGOGC(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	ctx, cancel := context.WithCancel(context.Background())
	wait, err := startServeGC(ctx, log, "1Ti")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	wait()
	if got := debug.SetGCPercent(100); got != serveGCPercent {
		t.Fatalf("GC percent %d, want %d", got, serveGCPercent)
	}

	t.Setenv("GOGC", "100")
	ctx, cancel = context.WithCancel(context.Background())
	wait, err = startServeGC(ctx, log, serveMaxHeapHeadroom)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	wait()
	if got := debug.SetGCPercent(old); got != 100 {
		t.Fatalf("with GOGC set the percent became %d, want it left at 100", got)
	}
}
