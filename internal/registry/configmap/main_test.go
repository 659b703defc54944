package configmap_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: every
// server started by servertest must stop completely.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
