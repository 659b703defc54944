// Package clients drives a real `leasehold serve` process with the clients
// people reach for outside Go: Debian's python3-kubernetes (run by
// /usr/bin/python3, the interpreter Debian's package is built for) and
// @kubernetes/client-node 2.x (run by the Node.js binary pinned in
// js/package.json, since client-node 2.x needs Node 22 or newer). Each
// language's checks live in scripts next to this file; a Go test starts a
// server, runs one script against the kubeconfig the server wrote, and
// fails with the script's output when it exits non-zero.
//
// Invariants: the binary is built once per run (TestMain); each test has
// its own server on a free port with its own data directory, stopped by
// PID when the test ends; every script runs under a deadline. A client
// that cannot be installed skips its tests with a NOT TESTED line on
// stderr (internal/testdeps, npmDeps), never silently.
package clients

import (
	"testing"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// leaseholdBinary is the binary TestMain built; read-only afterwards.
var leaseholdBinary string

func TestMain(m *testing.M) { testdeps.MainWithBinary(m, "clients", &leaseholdBinary) }
