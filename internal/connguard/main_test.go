package connguard

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test stops the servers, connections and timers' goroutines it
// starts: a leaked one fails the package.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
