package clusterroleaggregation_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if the controller (run by the test servers)
// leaves a goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
