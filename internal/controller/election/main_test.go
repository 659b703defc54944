package election_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The in-process server started by servertest, the controller and the
// client-go candidates must all stop completely.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
