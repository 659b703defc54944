package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// kubectlTimeout bounds one kubectl invocation.
const kubectlTimeout = 60 * time.Second

// expectedKubectlMinors are the versioned kubectl binaries the team's
// machines ship next to kubectl; an absent one is a visible skip, not a
// silent pass.
var expectedKubectlMinors = []int{27, 28, 29, 30, 31, 32, 33}

// kubectlBinary is one versioned kubectl executable.
type kubectlBinary struct {
	Version string // "1.27"
	Path    string // "" when the machine does not ship it
}

// kubectlBinaries finds kubectl.1.N in the directory holding the file
// `kubectl` resolves to: the expected versions (Path empty when absent) and
// any other kubectl.1.N found there. It skips t when kubectl is not on PATH.
func kubectlBinaries(t *testing.T) []kubectlBinary {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skipf("SKIP: kubectl is not on PATH, so no kubectl versions to test: %v", err)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatalf("resolving %s: %v", path, err)
	}
	dir := filepath.Dir(real)
	minors := map[int]string{}
	for _, m := range expectedKubectlMinors {
		minors[m] = ""
	}
	found, err := filepath.Glob(filepath.Join(dir, "kubectl.1.*"))
	if err != nil {
		t.Fatalf("listing kubectl versions in %s: %v", dir, err)
	}
	for _, f := range found {
		m, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(f), "kubectl.1."))
		if err != nil {
			continue
		}
		if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			minors[m] = f
		}
	}
	out := make([]kubectlBinary, 0, len(minors))
	for m, p := range minors {
		out = append(out, kubectlBinary{Version: fmt.Sprintf("1.%d", m), Path: p})
	}
	sort.Slice(out, func(i, j int) bool { return minorOf(out[i].Version) < minorOf(out[j].Version) })
	return out
}

func minorOf(version string) int {
	m, _ := strconv.Atoi(strings.TrimPrefix(version, "1."))
	return m
}

// kubectlRunner runs one kubectl binary against one server, with its own
// discovery cache so versions running in parallel never share one.
type kubectlRunner struct {
	t          *testing.T
	bin        kubectlBinary
	kubeconfig string
	cacheDir   string
}

// newKubectl binds bin to srv. It skips t, with a message, when the
// machine does not ship bin.
func newKubectl(t *testing.T, bin kubectlBinary, srv *serverProc) *kubectlRunner {
	t.Helper()
	if bin.Path == "" {
		t.Skipf("SKIP: kubectl %s is not installed next to kubectl on this machine", bin.Version)
	}
	return &kubectlRunner{t: t, bin: bin, kubeconfig: srv.Kubeconfig, cacheDir: t.TempDir()}
}

// kubectlResult is what one kubectl invocation produced.
type kubectlResult struct {
	Stdout, Stderr string
	Err            error
}

// command builds a kubectl command with this runner's kubeconfig and cache
// and a clean kubectl environment plus env.
func (k *kubectlRunner) command(ctx context.Context, env []string, args ...string) *exec.Cmd {
	full := append([]string{"--kubeconfig", k.kubeconfig, "--cache-dir", k.cacheDir}, args...)
	cmd := exec.CommandContext(ctx, k.bin.Path, full...)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "KUBECONFIG" || strings.HasPrefix(name, "KUBECTL_") || name == "KUBE_EDITOR" || name == "EDITOR" {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// exec runs kubectl with stdin and extra environment and returns what it
// printed, whatever the exit status.
func (k *kubectlRunner) exec(stdin string, env []string, args ...string) kubectlResult {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	cmd := k.command(ctx, env, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("kubectl did not finish within %v: %w", kubectlTimeout, err)
	}
	return kubectlResult{Stdout: stdout.String(), Stderr: stderr.String(), Err: err}
}

// run runs kubectl args, fails the test unless it exits 0, and returns stdout.
func (k *kubectlRunner) run(args ...string) string {
	k.t.Helper()
	return k.runWith("", nil, args...)
}

// runWith is run with stdin and extra environment variables.
func (k *kubectlRunner) runWith(stdin string, env []string, args ...string) string {
	k.t.Helper()
	r := k.exec(stdin, env, args...)
	if r.Err != nil {
		k.t.Fatalf("kubectl %s %s: %v\nstdout:\n%s\nstderr:\n%s", k.bin.Version, strings.Join(args, " "), r.Err, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

// fail runs kubectl args, fails the test if it exits 0, and returns stderr.
func (k *kubectlRunner) fail(args ...string) string {
	k.t.Helper()
	r := k.exec("", nil, args...)
	if r.Err == nil {
		k.t.Fatalf("kubectl %s %s succeeded, want an error; stdout:\n%s", k.bin.Version, strings.Join(args, " "), r.Stdout)
	}
	return r.Stderr
}

// tableRows splits kubectl's column output into rows of fields. Cells
// must not contain spaces (true of names, holders and ages).
func tableRows(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			rows = append(rows, f)
		}
	}
	return rows
}

// rowWith returns the first row whose first field is first, or nil.
func rowWith(rows [][]string, first string) []string {
	for _, r := range rows {
		if r[0] == first {
			return r
		}
	}
	return nil
}

// ageRE matches kubectl's short human durations ("0s", "5m33s", "2d").
var ageRE = regexp.MustCompile(`^[0-9]+[smhdy]([0-9]+[smh])?$`)

// writeFile writes content to name in a fresh temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatalf("writing %s: %v", path, err)
	}
	return path
}
