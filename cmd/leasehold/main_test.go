package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind (test
// servers, HTTP/2 client connections).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
