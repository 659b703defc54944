package kubecluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// kubectlTimeout bounds one kubectl run.
const kubectlTimeout = 60 * time.Second

// kubectlDir is the folder holding the file `kubectl` resolves to, where
// the team's machines (Google Cloud SDK) also ship kubectl.1.27 …
// kubectl.1.33.
func kubectlDir() (string, error) {
	path, err := exec.LookPath("kubectl")
	if err != nil {
		return "", fmt.Errorf("kubectl is not on PATH: %w", err)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", path, err)
	}
	return filepath.Dir(real), nil
}

// KubectlVersions are the versions ("1.27", …) of the kubectl.1.N
// binaries next to kubectl, oldest first. It skips t with a NOT TESTED line
// when kubectl is not installed.
func KubectlVersions(t testing.TB) []string {
	t.Helper()
	dir, err := kubectlDir()
	if err != nil {
		msg := fmt.Sprintf("NOT TESTED: no kubectl: %v", err)
		fmt.Fprintln(os.Stderr, msg)
		t.Skip(msg)
	}
	found, err := filepath.Glob(filepath.Join(dir, "kubectl.1.*"))
	if err != nil {
		t.Fatalf("kubecluster: list kubectl versions in %s: %v", dir, err)
	}
	var minors []int
	for _, f := range found {
		m, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(f), "kubectl.1."))
		if err != nil {
			continue
		}
		if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			minors = append(minors, m)
		}
	}
	sort.Ints(minors)
	versions := make([]string, len(minors))
	for i, m := range minors {
		versions[i] = fmt.Sprintf("1.%d", m)
	}
	return versions
}

// Kubectl runs kubectl version ("1.31" runs kubectl.1.31; "" runs plain
// kubectl) with AdminKubeconfig and returns its standard output; the error,
// when kubectl fails, carries its standard error.
func (c *Cluster) Kubectl(t testing.TB, version string, args ...string) (string, error) {
	t.Helper()
	return c.KubectlAs(t, c.AdminKubeconfig, version, args...)
}

// KubectlAs is Kubectl with another kubeconfig (NodeKubeconfig,
// UserKubeconfig).
func (c *Cluster) KubectlAs(t testing.TB, kubeconfig, version string, args ...string) (string, error) {
	t.Helper()
	dir, err := kubectlDir()
	if err != nil {
		t.Fatalf("kubecluster: %v", err)
	}
	bin := filepath.Join(dir, "kubectl")
	if version != "" {
		bin += "." + version
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("kubecluster: kubectl %s is not installed: %v", version, err)
	}
	// A discovery cache of its own for every run: a cache from before a
	// RouteGroupVersion or a restart must not answer for the server now.
	full := append([]string{"--kubeconfig", kubeconfig, "--cache-dir", t.TempDir()}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, full...)
	// The caller's kubectl settings must not leak in.
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "KUBECONFIG" || strings.HasPrefix(name, "KUBECTL_") {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("timed out after %v: %w", kubectlTimeout, err)
		}
		return stdout.String(), fmt.Errorf("%s %s: %w: %s", filepath.Base(bin), strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
