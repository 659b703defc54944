package robustness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Failpoints: the production source marks points inside the embedded
// store's commit path with gofail comments (`// gofail: var NAME
// struct{}`), which compile to nothing. failpointBinary builds the suite's
// own leasehold in which gofail has turned them into failpoints, and the
// injector arms one at a time through gofail's HTTP endpoint with the term
// panic("NAME"): the server dies exactly there, saying where on stderr, and
// is restarted.

// embeddedFailpoints are the failpoints in internal/storage/embedded, each
// with the fault kind that crashes the server there.
var embeddedFailpoints = []struct{ name, kind string }{
	{"beforeCommitSync", faultBeforeSync},
	{"afterCommitSync", faultAfterSync},
	{"compactBeforeSweptMark", faultCompaction},
}

// failpointOf is the failpoint a fault kind crashes at ("" for the others).
func failpointOf(kind string) string {
	for _, fp := range embeddedFailpoints {
		if fp.kind == kind {
			return fp.name
		}
	}
	return ""
}

// failpointWait bounds the wait for an armed failpoint to be reached: the
// commit points are reached by the next write, the compaction point by
// the compactor's next check, which runs every --history-retention (5 s
// here) when that is shorter than a minute.
const failpointWait = 15 * time.Second

// failpointBinary builds cmd/leasehold with gofail's failpoints enabled in
// the packages pkgs (directories relative to the module root) and returns
// its path, after checking that each of want was generated. The checkout
// is left untouched: gofail rewrites copies of the packages' files in a
// temporary directory, and `go build -overlay` compiles those in place of
// the originals. go.etcd.io/gofail is a tool of the module (go.mod), so
// `go tool gofail` runs it and its runtime package resolves.
//
// patch, if not nil, prepares under work a patched copy of a dependency
// and returns its module path and directory, which the build uses instead
// (a replace directive in a go.mod of the build's own, -modfile; overlays
// cannot replace files in the module cache).
func failpointBinary(t testing.TB, pkgs []string, want []string, patch func(t testing.TB, root, work string) (module, dir string)) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	work, unlock := buildDir(t)
	defer unlock()
	overlay := map[string]string{}
	var generated []byte
	for _, pkg := range pkgs {
		src := filepath.Join(root, pkg)
		// gofail names the generated bindings' package after the directory.
		dst := filepath.Join(work, pkg)
		if filepath.Base(dst) != filepath.Base(src) {
			t.Fatalf("failpoint package %s: bad directory", pkg)
		}
		if err := os.RemoveAll(dst); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		files, err := filepath.Glob(filepath.Join(src, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		orig := map[string][]byte{}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			orig[filepath.Base(f)] = b
			if err := os.WriteFile(filepath.Join(dst, filepath.Base(f)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		enable := exec.Command("go", "tool", "gofail", "enable", dst)
		enable.Dir = root
		if out, err := enable.CombinedOutput(); err != nil {
			t.Fatalf("go tool gofail enable %s: %v\n%s", pkg, err, out)
		}
		rewritten, err := os.ReadDir(dst)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range rewritten {
			b, err := os.ReadFile(filepath.Join(dst, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if o, ok := orig[e.Name()]; ok && bytes.Equal(o, b) {
				continue
			}
			overlay[filepath.Join(src, e.Name())] = filepath.Join(dst, e.Name())
			if strings.HasSuffix(e.Name(), ".fail.go") {
				generated = append(generated, b...)
			}
		}
	}
	buildArgs := []string{"build", "-overlay", filepath.Join(work, "overlay.json")}
	if patch != nil {
		module, dir := patch(t, root, work)
		modfile := filepath.Join(work, "go.mod")
		copyFile(t, filepath.Join(root, "go.mod"), modfile)
		copyFile(t, filepath.Join(root, "go.sum"), filepath.Join(work, "go.sum"))
		edit := exec.Command("go", "mod", "edit", "-replace", module+"="+dir, modfile)
		if out, err := edit.CombinedOutput(); err != nil {
			t.Fatalf("go mod edit -replace %s: %v\n%s", module, err, out)
		}
		buildArgs = append(buildArgs, "-modfile", modfile)
	}
	for _, name := range want {
		if !bytes.Contains(generated, []byte(fmt.Sprintf("runtime.NewFailpoint(%q)", name))) {
			t.Fatalf("gofail generated no failpoint %s in %v: its `// gofail: var %s struct{}` comment is gone", name, pkgs, name)
		}
	}
	b, err := json.Marshal(map[string]any{"Replace": overlay})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "overlay.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "leasehold-failpoints")
	start := time.Now()
	build := exec.Command("go", append(buildArgs, "-o", bin, "./cmd/leasehold")...)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -overlay (failpoints in %v) ./cmd/leasehold: %v\n%s", pkgs, err, out)
	}
	t.Logf("built leasehold with failpoints %v (patched dependency: %v) in %v", want, patch != nil, time.Since(start).Round(100*time.Millisecond))
	return bin
}

// failpointLeasehold is the suite's failpoint build: the embedded store's
// failpoints, and the elector's skewed clock (electorClockOverlay).
func failpointLeasehold(t testing.TB) string {
	t.Helper()
	names := make([]string, len(embeddedFailpoints))
	for i, fp := range embeddedFailpoints {
		names[i] = fp.name
	}
	return failpointBinary(t, []string{"internal/storage/embedded"}, names, electorClockPatch)
}

// startFailpointServer is startServerIn for a failpoint build: each
// lifetime serves gofail's HTTP endpoint on a port of its own.
func startFailpointServer(t testing.TB, bin, dataDir string, extraArgs ...string) *server {
	t.Helper()
	gofail := net.JoinHostPort("127.0.0.1", fmt.Sprint(freePort(t)))
	return launch(t, &server{t: t, bin: bin, gofail: gofail, env: []string{"GOFAIL_HTTP=" + gofail},
		dataDir: dataDir, port: freePort(t), args: extraArgs})
}

// setFailpoint sets failpoint name to term (gofail's syntax, such as
// "panic") through the running server's gofail endpoint, or turns it off
// when term is "".
func (s *server) setFailpoint(name, term string) error {
	if s.gofail == "" {
		return fmt.Errorf("failpoint %s: the server is not a failpoint build", name)
	}
	return setFailpoint(s.gofail, name, term)
}

// setFailpoint sets failpoint name to term in the process whose gofail
// endpoint is addr (off when term is "").
func setFailpoint(addr, name, term string) error {
	method, body := http.MethodPut, term
	if term == "" {
		method = http.MethodDelete
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+"/"+name, strings.NewReader(body))
	if err != nil {
		return fmt.Errorf("failpoint %s: %w", name, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("failpoint %s=%q: %w", name, term, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("failpoint %s=%q: gofail answered %s", name, term, resp.Status)
	}
	return nil
}

// failpointPanic is how a gofail panic term shows on stderr.
var failpointPanic = regexp.MustCompile(`panic: failpoint panic: (\w+)`)

// crashAtFailpoint arms failpoint name with a panic on srv, waits for the
// server to die there, and restarts it. It reports whether the failpoint
// was reached; one not reached within failpointWait is turned off again.
// A server that dies while the failpoint is armed but elsewhere is a crash
// (a violation), restarted all the same.
func (in *injector) crashAtFailpoint(srv *server, name string) (bool, error) {
	mark := srv.logLen()
	// panic("NAME") panics with "failpoint panic: NAME"; a bare panic on a
	// struct{} failpoint would print "failpoint panic: {}".
	if err := srv.setFailpoint(name, fmt.Sprintf("panic(%q)", name)); err != nil {
		return false, err
	}
	exited, exitErr := srv.awaitExit(failpointWait)
	if !exited {
		if err := srv.setFailpoint(name, ""); err != nil {
			return false, err
		}
		// It may have been reached while being turned off.
		if exited, exitErr = srv.awaitExit(100 * time.Millisecond); !exited {
			return false, nil
		}
	}
	in.killed()
	m := failpointPanic.FindStringSubmatch(srv.logsFrom(mark))
	reached := m != nil && m[1] == name
	if !reached {
		in.mu.Lock()
		in.crashes = append(in.crashes, fmt.Sprintf("the server on %s exited by itself (%v) while failpoint %s was armed, but not at it, at %.3fs:\n%s",
			srv.addr(), exitErr, name, float64(in.h.now())/1e9, lastLines(srv.logsFrom(mark), 20)))
		in.mu.Unlock()
	}
	if err := srv.start(); err != nil {
		return reached, fmt.Errorf("restart after a crash with failpoint %s armed: %w", name, err)
	}
	return reached, nil
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// Clock faults. Debian's faketime cannot skew a Go program: it interposes
// libc's clock functions (LD_PRELOAD), and Go reads the clock through the
// vDSO without libc, in a binary that is static besides. Measured here
// (faketime 0.9.10): `faketime -f +365d date` printed a date a year ahead,
// while a Go program printing time.Now under the same faketime, even one
// linked with cgo and dynamically, printed today's (libc's time() in that
// same process was a year ahead). client-go's leader elector takes no clock
// in its configuration either: NewLeaderElector sets clock.RealClock{} in
// an unexported field. So the suite's build replaces that one expression in
// client-go's leaderelection.go with a clock that gofail failpoints skew
// (skewedClockSource, electorClockPatch), per elector process, at run time:
//
//   - electorClockJump, armed with return(N): the clock jumps to N ms ahead
//     of the real one (behind, if negative), and stays so when the
//     failpoint is turned off;
//   - electorClockRate, armed with return(N): the clock runs N times as fast
//     until the failpoint is turned off, and keeps the lead it took.
//
// client-go judges a lease by its own observation time and the monotonic
// clock (time.Time keeps its monotonic reading through Add), so a wall
// clock step alone, which is what NTP or faketime would make, changes
// nothing; the skew here moves the readings client-go compares.

// skewedClockSource is compiled into k8s.io/client-go/tools/leaderelection
// in the suite's build only.
const skewedClockSource = `package leaderelection

// Compiled in only by leasehold's robustness suite (test/robustness): the
// elector's clock, skewed by gofail failpoints armed per process.

import (
	"sync"
	"time"

	gofail "go.etcd.io/gofail/runtime"
	"k8s.io/utils/clock"
)

var (
	fpElectorClockJump = gofail.NewFailpoint("electorClockJump")
	fpElectorClockRate = gofail.NewFailpoint("electorClockRate")
)

type skewedClock struct {
	clock.RealClock
	mu   sync.Mutex
	jump time.Duration
	fast time.Duration
	rate  int
	since time.Time
}

func newSkewedClock() clock.Clock { return &skewedClock{} }

func (c *skewedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if v, err := fpElectorClockJump.Acquire(); err == nil {
		if ms, ok := v.(int); ok {
			c.jump = time.Duration(ms) * time.Millisecond
		}
	}
	rate := 1
	if v, err := fpElectorClockRate.Acquire(); err == nil {
		if r, ok := v.(int); ok && r > 1 {
			rate = r
		}
	}
	if rate != c.rate {
		if c.rate > 1 {
			c.fast += time.Duration(c.rate-1) * now.Sub(c.since)
		}
		c.rate, c.since = rate, now
	}
	t := now.Add(c.jump + c.fast)
	if c.rate > 1 {
		t = t.Add(time.Duration(c.rate-1) * now.Sub(c.since))
	}
	return t
}

func (c *skewedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
`

// realClockInElector is the expression NewLeaderElector sets its clock
// with.
var realClockInElector = regexp.MustCompile(`clock:\s+clock\.RealClock\{\},`)

// electorClockPatch makes, under work, the client-go module with the
// skewed clock in its leader elector: leaderelection.go with
// newSkewedClock() in place of clock.RealClock{}, and skewedClockSource
// next to it; every other file and directory is a symbolic link into the
// module cache.
func electorClockPatch(t testing.TB, root, work string) (string, string) {
	t.Helper()
	list := exec.Command("go", "list", "-m", "-f", "{{.Path}} {{.Dir}}", "k8s.io/client-go")
	list.Dir = root
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list -m k8s.io/client-go: %v", err)
	}
	module, modDir, ok := strings.Cut(strings.TrimSpace(string(out)), " ")
	if !ok {
		t.Fatalf("go list -m k8s.io/client-go: %q", out)
	}
	rel := filepath.Join("tools", "leaderelection")
	copyDir := filepath.Join(work, "client-go")
	if err := os.RemoveAll(copyDir); err != nil {
		t.Fatal(err)
	}
	// Link every entry but the one on the way to the patched package.
	for _, d := range []string{".", "tools", rel} {
		entries, err := os.ReadDir(filepath.Join(modDir, d))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(copyDir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			p := filepath.Join(d, e.Name())
			if p == "tools" || p == rel || p == filepath.Join(rel, "leaderelection.go") {
				continue
			}
			if err := os.Symlink(filepath.Join(modDir, p), filepath.Join(copyDir, p)); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir := filepath.Join(modDir, rel)
	src, err := os.ReadFile(filepath.Join(dir, "leaderelection.go"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(realClockInElector.FindAll(src, -1)); n != 1 {
		t.Fatalf("client-go's leaderelection.go sets clock.RealClock{} %d times, not once: the elector's clock cannot be skewed", n)
	}
	patched := realClockInElector.ReplaceAll(src, []byte("clock: newSkewedClock(),"))
	for name, b := range map[string][]byte{"leaderelection.go": patched, "zz_skewed_clock.go": []byte(skewedClockSource)} {
		if err := os.WriteFile(filepath.Join(copyDir, rel, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return module, copyDir
}

// buildDir is where failpointBinary prepares its sources, locked against
// another test process doing the same; unlock releases it. It is a fixed
// directory in the user's cache, not a temporary one: the compiler's cache
// keys packages by their source paths, and with fresh paths every run the
// client-go packages and everything above them (minutes of compiling)
// would be compiled again.
func buildDir(t testing.TB) (string, func()) {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatalf("user cache dir: %v", err)
	}
	dir := filepath.Join(cache, "leasehold", "robustness-build")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		t.Fatalf("lock %s: %v", dir, err)
	}
	return dir, func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); _ = f.Close() }
}

// copyFile copies src to dst.
func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err == nil {
		err = os.WriteFile(dst, b, 0o644)
	}
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}
