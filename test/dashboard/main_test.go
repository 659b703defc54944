// Package dashboard_test drives `leasehold dashboard` in a real browser
// (headless Chromium through chromedp) against real processes: a `leasehold
// serve`, node agents and electors, each started from the binary built once
// by TestMain, on 127.0.0.1 with free ports, and stopped by PID when the
// test ends. It checks what a person sees on the page.
//
// Chromium comes from Debian's chromium package (testdeps installs it on a
// fresh machine); when it cannot be installed the browser tests are skipped
// with a NOT TESTED line, never passed silently.
package dashboard_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// binary is the leasehold binary built by TestMain; read-only afterwards.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "leasehold-dashboard-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "dashboard: temp dir: %v\n", err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "leasehold")
	build := exec.Command("go", "build", "-o", binary, "github.com/leasehold/leasehold/cmd/leasehold")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "dashboard: go build ./cmd/leasehold: %v\n", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		_ = os.RemoveAll(dir)
		os.Exit(code)
	}))
}
