package dashboard_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// startTimeout bounds a process's wait for its first line of interest; the
// 2-core machine is shared.
const startTimeout = 60 * time.Second

// start runs `leasehold args...`; the process is stopped by its PID when
// the test ends, and its output printed if the test failed.
func start(t testing.TB, name string, args ...string) *testdeps.Process {
	t.Helper()
	return testdeps.StartProcess(t, name, testdeps.ProcessOptions{}, append([]string{binary}, args...)...)
}

// startServer runs `leasehold serve` on a free port; the node monitor
// marks a node Unknown after 6 s without a heartbeat, so tests need not
// wait the default 50 s.
func startServer(t testing.TB, extra ...string) *testdeps.Server {
	t.Helper()
	return testdeps.StartServer(t, binary, append([]string{"--node-monitor-period", "1s", "--node-monitor-grace-period", "6s"}, extra...)...)
}

var urlRE = regexp.MustCompile(`^Dashboard: (http://127\.0\.0\.1:[0-9]+/)$`)

// startDashboard runs `leasehold dashboard` on a free loopback port and
// returns it with the URL it printed.
func startDashboard(t testing.TB, kubeconfig string, extra ...string) (*testdeps.Process, string) {
	t.Helper()
	p := start(t, "dashboard", append([]string{"dashboard", "--kubeconfig", kubeconfig, "--listen", "127.0.0.1:0"}, extra...)...)
	line := p.WaitLine(0, startTimeout, "Dashboard: ")
	m := urlRE.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("dashboard printed %q, want %v", line, urlRE)
	}
	return p, m[1]
}
