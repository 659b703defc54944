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
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// leaseholdBinary is the path of the binary built by TestMain. It is written
// once before any test runs and only read afterwards.
var leaseholdBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "leasehold-e2e-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: temp dir: %v\n", err)
		os.Exit(1)
	}
	leaseholdBinary, err = buildLeasehold(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: removing %s: %v\n", dir, err)
		}
		os.Exit(code)
	}))
}

// buildLeasehold compiles ./cmd/leasehold into dir, so the binary is the
// source under test and not whatever leasehold is on PATH.
func buildLeasehold(dir string) (string, error) {
	bin := filepath.Join(dir, "leasehold")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/leasehold/leasehold/cmd/leasehold")
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/leasehold: %w", err)
	}
	return bin, nil
}
