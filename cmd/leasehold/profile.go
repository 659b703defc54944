package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// withCPUProfile runs fn, under the CPU profiler writing to path when path
// is not empty (the --cpu-profile of bench and dashboard).
func withCPUProfile(path string, fn func() error) error {
	if path == "" {
		return fn()
	}
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		_ = out.Close()
		return fmt.Errorf("starting CPU profile: %w", err)
	}
	runErr := fn()
	pprof.StopCPUProfile()
	if err := out.Close(); err != nil && runErr == nil {
		return fmt.Errorf("writing CPU profile: %w", err)
	}
	return runErr
}
