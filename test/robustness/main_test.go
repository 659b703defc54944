package robustness

import (
	"os"
	"testing"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// leaseholdBinary is the path of the binary TestMain builds; written once
// before any test runs.
var leaseholdBinary string

func TestMain(m *testing.M) {
	// The fencing test runs this test binary as the command under
	// election; in that mode it is the writer, not a test run.
	if os.Getenv(writerEnvURL) != "" {
		os.Exit(runWriter())
	}
	testdeps.MainWithBinary(m, "robustness", &leaseholdBinary)
}
