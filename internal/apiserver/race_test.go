package apiserver_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestRecognizedRenewalsUnderTheRaceDetector runs
// TestConcurrentRecognizedRenewalsLeaveTheCacheAlone again under the race
// detector. A recognized renewal shares memory with the cached lease that
// other goroutines read (objects.Store.RenewalFromWire), and a write into it
// of the value already there (the intern walk without its like's-own-memory
// check, for slices and pointers) changes nothing a test can see: only the
// race detector does. The suite runs without -race, so this test runs the
// one test that needs it.
func TestRecognizedRenewalsUnderTheRaceDetector(t *testing.T) {
	if raceEnabled {
		t.Skip("this binary is under the race detector already")
	}
	if testing.Short() {
		t.Skip("builds the package with -race")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("NOT TESTED: no go command to build with -race: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "test", "-race", "-count=1",
		"-run", "^TestConcurrentRecognizedRenewalsLeaveTheCacheAlone$", ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		if s := string(out); strings.Contains(s, "requires cgo") || strings.Contains(s, "C compiler") {
			t.Skipf("NOT TESTED: the race detector needs cgo and a C compiler: %s", out)
		}
		t.Fatalf("go test -race: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "ok") {
		t.Fatalf("go test -race ran nothing:\n%s", out)
	}
}
