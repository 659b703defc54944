package rbac

import (
	"testing"

	"go.uber.org/goleak"
)

// CacheSource's watchers and builder, and the watch cache and store the
// tests run under it, must all stop.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
