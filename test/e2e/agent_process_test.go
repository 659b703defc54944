package e2e

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// agentStopTimeout bounds a graceful agent stop before SIGKILL.
const agentStopTimeout = 20 * time.Second

// agentProc is one running `leasehold agent` process. Its log is kept so
// tests can wait for the lines the kubelet would log (WaitLine), and
// stopping it fails the test unless it exits 0, the agent's promise on
// SIGTERM.
type agentProc struct {
	*testdeps.Process
	Node string
}

// startAgent runs `leasehold agent --node node --kubeconfig kubeconfig` plus
// extraArgs. The process is stopped when the test ends (resumed first if
// the test left it SIGSTOPped); its log is printed if the test failed.
func startAgent(t testing.TB, node, kubeconfig string, extraArgs ...string) *agentProc {
	t.Helper()
	argv := append([]string{leaseholdBinary, "agent", "--node", node, "--kubeconfig", kubeconfig, "--v", "4"}, extraArgs...)
	p := testdeps.StartProcess(t, "agent "+node, testdeps.ProcessOptions{CleanExit: true, StopTimeout: agentStopTimeout}, argv...)
	return &agentProc{Process: p, Node: node}
}
