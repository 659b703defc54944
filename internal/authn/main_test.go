package authn

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind (the token
// file's reload loop).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
