package cluster

import (
	"testing"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// proc is a leasehold process (serve, agent, leases copy, bench) a test
// started: its output is kept, and it is stopped by its PID when the test
// ends.
type proc = testdeps.Process

// startProc runs `leasehold args...` as name.
func startProc(t testing.TB, name string, args ...string) *proc {
	t.Helper()
	return testdeps.StartProcess(t, name, testdeps.ProcessOptions{}, append([]string{leaseholdBinary}, args...)...)
}
