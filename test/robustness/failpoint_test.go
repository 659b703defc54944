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
func failpointBinary(t testing.TB, pkgs []string, want []string) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	work := t.TempDir()
	overlay := map[string]string{}
	var generated []byte
	for _, pkg := range pkgs {
		src := filepath.Join(root, pkg)
		// gofail names the generated bindings' package after the directory.
		dst := filepath.Join(work, pkg)
		if filepath.Base(dst) != filepath.Base(src) {
			t.Fatalf("failpoint package %s: bad directory", pkg)
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
	for _, name := range want {
		if !bytes.Contains(generated, []byte(fmt.Sprintf("runtime.NewFailpoint(%q)", name))) {
			t.Fatalf("gofail generated no failpoint %s in %v: its `// gofail: var %s struct{}` comment is gone", name, pkgs, name)
		}
	}
	b, err := json.Marshal(map[string]any{"Replace": overlay})
	if err != nil {
		t.Fatal(err)
	}
	overlayFile := filepath.Join(work, "overlay.json")
	if err := os.WriteFile(overlayFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(work, "leasehold-failpoints")
	start := time.Now()
	build := exec.Command("go", "build", "-overlay", overlayFile, "-o", bin, "./cmd/leasehold")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -overlay (failpoints in %v) ./cmd/leasehold: %v\n%s", pkgs, err, out)
	}
	t.Logf("built leasehold with failpoints %v in %v", want, time.Since(start).Round(100*time.Millisecond))
	return bin
}

// embeddedFailpointBinary is failpointBinary for the embedded store's
// failpoints.
func embeddedFailpointBinary(t testing.TB) string {
	t.Helper()
	names := make([]string, len(embeddedFailpoints))
	for i, fp := range embeddedFailpoints {
		names[i] = fp.name
	}
	return failpointBinary(t, []string{"internal/storage/embedded"}, names)
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
	method, body := http.MethodPut, term
	if term == "" {
		method = http.MethodDelete
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://"+s.gofail+"/"+name, strings.NewReader(body))
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
