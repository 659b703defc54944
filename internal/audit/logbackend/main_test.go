package logbackend

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashHelperEnv); dir != "" {
		crashHelper(dir) // never returns: the parent test kills it
	}
	goleak.VerifyTestMain(m)
}
