package main

import (
	"context"
	"io"
	"log/slog"
	"math"
	"runtime/debug"
	"strings"
	"testing"
)

func TestStartServeGCRefusesBadLimit(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, v := range []string{"lots", "-1Mi"} {
		if _, err := startServeGC(context.Background(), log, v); err == nil || !strings.Contains(err.Error(), "--memory-limit") {
			t.Errorf("--memory-limit %s: error %v, want one naming the flag", v, err)
		}
	}
}

// TestStartServeGCSetsTargetUnlessEnvironment: without GOGC and
// GOMEMLIMIT, serve's GC percent and memory limit are set (and tuned until
// the context ends); with either, nothing is changed.
func TestStartServeGCSetsTargetUnlessEnvironment(t *testing.T) {
	oldPercent := debug.SetGCPercent(100)
	oldLimit := debug.SetMemoryLimit(-1)
	defer func() {
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	}()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	start := func(limit string) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		wait, err := startServeGC(ctx, log, limit)
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		wait()
	}

	start("1Ti")
	if got := debug.SetGCPercent(100); got != serveGCPercent {
		t.Fatalf("GC percent %d, want %d", got, serveGCPercent)
	}
	if got := debug.SetMemoryLimit(math.MaxInt64); got != 1<<40 {
		t.Fatalf("memory limit %d, want 1 TiB", got)
	}

	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, "100")
			start(serveMemoryLimit)
			if got := debug.SetGCPercent(100); got != 100 {
				t.Fatalf("with %s set the percent became %d, want it left at 100", env, got)
			}
			if got := debug.SetMemoryLimit(math.MaxInt64); got != math.MaxInt64 {
				t.Fatalf("with %s set the memory limit became %d, want none", env, got)
			}
		})
	}
}
