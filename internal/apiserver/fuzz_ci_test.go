package apiserver_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fuzzTargets are the fuzz targets TestFuzzShortRuns runs; a target added to
// fuzz_test.go belongs here too.
var fuzzTargets = []string{"FuzzCreate", "FuzzUpdate", "FuzzPatch", "FuzzListQuery", "FuzzRequest", "FuzzUnmarshalEnveloped"}

const (
	// fuzzTimePerTarget keeps the whole short run (6 targets) near 36 s.
	fuzzTimePerTarget = 6 * time.Second
	// fuzzBuildTimeout bounds building the instrumented test binary. Fuzzing
	// instruments every dependency (k8s.io/* included): from a cold build
	// cache that takes minutes on two cores, from a warm one seconds.
	fuzzBuildTimeout = 4 * time.Minute
)

// TestFuzzShortRuns is CI's short fuzzing run (CI runs only `go test
// ./...`): it builds this package's test binary with fuzzing
// instrumentation once, then fuzzes each target for a few seconds and fails
// on any crasher, which the fuzzer writes to testdata/fuzz/<target>/ so it
// becomes a seed of the ordinary test run. Skipped with -short.
func TestFuzzShortRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP: fuzzing runs only without -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("SKIP: no go command on PATH to build the fuzzing binary: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "apiserver.fuzz.test")
	buildCtx, cancel := context.WithTimeout(context.Background(), fuzzBuildTimeout)
	defer cancel()
	start := time.Now()
	// -fuzz on a build instruments it for coverage guidance; the pattern
	// must name a target of the package.
	build := exec.CommandContext(buildCtx, goTool, "test", "-c", "-vet=off", "-o", bin, "-fuzz=^FuzzCreate$", ".")
	build.WaitDelay = 10 * time.Second
	if out, err := build.CombinedOutput(); err != nil {
		if errors.Is(buildCtx.Err(), context.DeadlineExceeded) {
			t.Skipf("SKIP: building the instrumented binary took over %v (cold build cache); nothing was fuzzed", fuzzBuildTimeout)
		}
		t.Fatalf("building the fuzzing binary: %v\n%s", err, out)
	}
	t.Logf("instrumented build: %v", time.Since(start).Round(time.Millisecond))
	cacheDir := filepath.Join(dir, "fuzzcache")
	for _, target := range fuzzTargets {
		runFuzzTarget(t, bin, cacheDir, target)
	}
}

// runFuzzTarget fuzzes one target in this package's directory (so the seed
// corpus in testdata/fuzz is read and a crasher is written there).
func runFuzzTarget(t *testing.T, bin, cacheDir, target string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), fuzzTimePerTarget+time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, bin,
		"-test.run=^$", "-test.fuzz=^"+target+"$", "-test.fuzztime="+fuzzTimePerTarget.String(),
		"-test.fuzzcachedir="+cacheDir, "-test.parallel=2")
	cmd.Env = append(os.Environ(), "GOMAXPROCS=2")
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil && onlyDeadlineRace(out, target) {
		t.Logf("%s: the fuzzing coordinator's -fuzztime race (go.dev/issue/75804, fixed in Go 1.27) ended the run with no failing input: %s",
			target, lastFuzzLine(out))
		return
	}
	if err != nil {
		t.Errorf("fuzzing %s failed (%v) after %v; the crasher, if any, is in testdata/fuzz/%s:\n%s",
			target, err, time.Since(start).Round(time.Millisecond), target, tail(out, 60))
		return
	}
	t.Logf("%s: %s", target, lastFuzzLine(out))
}

// onlyDeadlineRace tells whether a failed fuzzing run of target failed with
// nothing but "context deadline exceeded" and wrote no failing input. Go
// 1.26's coordinator reports that when -fuzztime expires while a worker is
// mid-call, which a loaded machine (the rest of the suite runs alongside)
// makes likely; a real finding always names the input it wrote.
func onlyDeadlineRace(out []byte, target string) bool {
	text := string(out)
	if strings.Contains(text, "Failing input written to") {
		return false
	}
	_, after, ok := strings.Cut(text, "--- FAIL: "+target+" (")
	if !ok {
		return false
	}
	lines := strings.Split(after, "\n")[1:] // after the FAIL line itself
	var reasons []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "FAIL" || strings.HasPrefix(l, "FAIL\t") {
			break
		}
		if l != "" {
			reasons = append(reasons, l)
		}
	}
	return len(reasons) == 1 && reasons[0] == "context deadline exceeded"
}

// lastFuzzLine is the fuzzer's last progress line (elapsed, execs).
func lastFuzzLine(out []byte) string {
	last := ""
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "fuzz: elapsed") {
			last = l
		}
	}
	return last
}

func tail(out []byte, lines int) string {
	ls := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

func TestOnlyDeadlineRaceTellsTheGoRaceFromFindings(t *testing.T) {
	race := `fuzz: elapsed: 7s, execs: 3345 (0/sec), new interesting: 2 (total: 5)
--- FAIL: FuzzUnmarshalEnveloped (7.02s)
    context deadline exceeded
FAIL
`
	crasher := `fuzz: elapsed: 2s, execs: 100 (50/sec), new interesting: 0 (total: 3)
--- FAIL: FuzzUnmarshalEnveloped (2.01s)
    --- FAIL: FuzzUnmarshalEnveloped (0.00s)
        testing.go:1591: panic: runtime error: index out of range
    Failing input written to testdata/fuzz/FuzzUnmarshalEnveloped/0123abcd
    To re-run:
    go test -run=FuzzUnmarshalEnveloped/0123abcd
FAIL
`
	deadlineAndMore := `--- FAIL: FuzzCreate (7.00s)
    fuzz_test.go:40: unexpected 500
    context deadline exceeded
FAIL
`
	for name, tc := range map[string]struct {
		out, target string
		want        bool
	}{
		"the race":            {race, "FuzzUnmarshalEnveloped", true},
		"a crasher":           {crasher, "FuzzUnmarshalEnveloped", false},
		"a failure and more":  {deadlineAndMore, "FuzzCreate", false},
		"another target":      {race, "FuzzCreate", false},
		"no FAIL line at all": {"exit status 2\n", "FuzzCreate", false},
	} {
		if got := onlyDeadlineRace([]byte(tc.out), tc.target); got != tc.want {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}
