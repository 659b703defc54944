package e2e

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// serverProc is one running `leasehold serve` process; stopping it fails
// the test unless it exits 0.
type serverProc = testdeps.Server

// startServer starts `leasehold serve` on a free port with a fresh data dir
// (plus extraArgs) and waits for its serving line. The process is stopped
// gracefully when the test ends; its log is printed if the test failed.
func startServer(t testing.TB, extraArgs ...string) *serverProc {
	t.Helper()
	return testdeps.StartServer(t, leaseholdBinary, extraArgs...)
}

// startServerIn is startServer on a given data dir (reuse one to test
// restarts).
func startServerIn(t testing.TB, dataDir string, extraArgs ...string) *serverProc {
	t.Helper()
	return startServerVia(t, nil, dataDir, extraArgs...)
}

// startServerVia is startServerIn run through launcher, a command that
// execs the rest of its arguments (such as prlimit), so that the process
// it starts is still the server.
func startServerVia(t testing.TB, launcher []string, dataDir string, extraArgs ...string) *serverProc {
	t.Helper()
	p, err := launchServer(t, 0, launcher, dataDir, extraArgs...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// launchServer is startServerVia for a test that expects the server may
// refuse to start (testdeps.LaunchServer): it returns an error if the
// process exits before serving or does not serve within timeout
// (testdeps.ServeStartTimeout if zero).
func launchServer(t testing.TB, timeout time.Duration, launcher []string, dataDir string, extraArgs ...string) (*serverProc, error) {
	t.Helper()
	return testdeps.LaunchServer(t, leaseholdBinary, testdeps.ServeOptions{DataDir: dataDir, Launcher: launcher, StartTimeout: timeout}, extraArgs...)
}
