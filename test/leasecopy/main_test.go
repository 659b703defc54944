// Package leasecopy tests `leasehold leases copy` end to end with real
// processes only: `leasehold serve` processes as source and target, a
// Debian etcd as the etcd target with a `leasehold serve --etcd-servers`
// reading back what was written there, and the copy itself run as the
// binary users run.
//
// Invariants: every process listens on 127.0.0.1 on a free port with its
// own temporary directory, is stopped by its PID when its test ends, and
// every wait is bounded.
package leasecopy

import (
	"testing"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// binary is the leasehold binary TestMain built; only read by tests.
var binary string

func TestMain(m *testing.M) { testdeps.MainWithBinary(m, "leasecopy", &binary) }
