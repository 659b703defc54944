// Package e2e runs the real leasehold binary as a separate process and
// drives it with the real clients users have (kubectl of every version the
// machine ships, client-go programs, agents, electors).
//
// Invariants the helpers keep, so tests can be added freely in this package:
//   - the binary is built once per `go test` run (TestMain) into a temporary
//     directory that is removed afterwards;
//   - every process a test starts listens on 127.0.0.1 on a free port, uses
//     its own temporary data directory, and is stopped when the test ends
//     (t.Cleanup), so nothing outlives the test that started it;
//   - every wait is bounded in time.
package e2e

import (
	"testing"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// leaseholdBinary is the path of the binary built by TestMain. It is written
// once before any test runs and only read afterwards.
var leaseholdBinary string

func TestMain(m *testing.M) { testdeps.MainWithBinary(m, "e2e", &leaseholdBinary) }
