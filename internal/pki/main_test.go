package pki

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind (HTTP
// servers, HTTP/2 client connections).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
