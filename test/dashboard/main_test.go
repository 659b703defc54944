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
	"testing"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// binary is the leasehold binary built by TestMain; read-only afterwards.
var binary string

func TestMain(m *testing.M) { testdeps.MainWithBinary(m, "dashboard", &binary) }
