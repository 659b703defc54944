package coalesce

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test stops the writers it starts: a leaked writer goroutine fails
// the package.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
