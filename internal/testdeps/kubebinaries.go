package testdeps

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// kubeBuildTimeout bounds one build of kube-apiserver and
// kube-controller-manager. A cold build (every Kubernetes package compiled)
// takes about 6.5 minutes on a quiet 2-core machine; the machine is shared,
// so allow three times that.
const kubeBuildTimeout = 20 * time.Minute

// Names of the commands the kubetools module builds.
const (
	kubeAPIServerBin         = "kube-apiserver"
	kubeControllerManagerBin = "kube-controller-manager"
)

// KubeBinaries returns the paths of kube-apiserver and
// kube-controller-manager built from the Kubernetes release pinned in
// internal/testdeps/kubetools (its go.mod and go.sum). They are built once
// per machine from the Go module proxy into
// os.UserCacheDir()/leasehold/kubetools/<key>/, where key hashes go.mod,
// go.sum and the Go toolchain version (another toolchain builds other
// binaries), and reused while present. An exclusive flock on
// <key>.lock makes parallel test binaries build once: the others wait and
// then find the binaries. When they cannot be built (no go command, no
// network for the module proxy, a failed build), the test is skipped with a
// NOT TESTED message, as Debian does for a package it cannot install.
func KubeBinaries(t testing.TB) (apiserver, controllerManager string) {
	t.Helper()
	// The first build takes minutes: say on stderr (which go test shows
	// even without -v) why the test is quiet.
	dir, err := ensureKubeBinaries(func(msg string) { fmt.Fprintln(os.Stderr, msg) })
	if err != nil {
		msg := fmt.Sprintf("NOT TESTED: kube-apiserver and kube-controller-manager could not be built from internal/testdeps/kubetools: %v", err)
		fmt.Fprintln(os.Stderr, msg)
		t.Skip(msg)
	}
	return filepath.Join(dir, kubeAPIServerBin), filepath.Join(dir, kubeControllerManagerBin)
}

// kubetoolsDir is the folder of the kubetools module: next to this source
// file. Tests run from the source tree, so the compiled-in path is there.
func kubetoolsDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot find the source file of package testdeps")
	}
	dir := filepath.Join(filepath.Dir(file), "kubetools")
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("kubetools module not found next to %s (built with -trimpath?): %w", file, err)
	}
	return dir, nil
}

// ensureKubeBinaries returns the cache folder holding both binaries,
// building them first when they are missing. progress receives a line
// before a build starts and when it ends.
func ensureKubeBinaries(progress func(string)) (string, error) {
	src, err := kubetoolsDir()
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("user cache dir: %w", err)
	}
	return buildKubeBinaries(src, filepath.Join(cache, "leasehold", "kubetools"), progress)
}

// buildKubeBinaries is ensureKubeBinaries for the tool module in src and
// the cache folder root (separate so that tests can use a small stand-in
// module and a cache of their own).
func buildKubeBinaries(src, root string, progress func(string)) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the go command is not on PATH: %w", err)
	}
	key, err := kubetoolsKey(src, goBin)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, key)
	if kubeBinariesPresent(dir) {
		return dir, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", root, err)
	}
	unlock, err := flockFile(filepath.Join(root, key+".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	// Another test binary may have built them while we waited for the lock.
	if kubeBinariesPresent(dir) {
		return dir, nil
	}
	// Build into a fresh folder and rename it into place, so that a build
	// killed half way (test timeout, ^C) never leaves one binary, or a
	// truncated one, where the next run would take it as finished. Such a
	// killed build leaves its folder (hundreds of MB) behind: remove those
	// first; holding the lock, nobody else is building this key.
	if stale, err := filepath.Glob(filepath.Join(root, key+".building-*")); err == nil {
		for _, d := range stale {
			_ = os.RemoveAll(d)
		}
	}
	tmp, err := os.MkdirTemp(root, key+".building-")
	if err != nil {
		return "", fmt.Errorf("build folder: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	progress(fmt.Sprintf("testdeps: building kube-apiserver and kube-controller-manager from %s into %s (once per go.mod; up to %v cold)", src, dir, kubeBuildTimeout))
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), kubeBuildTimeout)
	defer cancel()
	ldflags, err := kubeVersionLdflags(src)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, goBin, "build", "-ldflags", ldflags, "-o", tmp+string(filepath.Separator),
		"k8s.io/kubernetes/cmd/"+kubeAPIServerBin, "k8s.io/kubernetes/cmd/"+kubeControllerManagerBin)
	cmd.Dir = src
	// GOWORK=off: a go.work above the checkout must not pull this module
	// into a workspace with other versions of the k8s.io modules.
	// GOFLAGS=-mod=readonly: the build uses go.sum as committed and never
	// edits it.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false")
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("go build did not finish within %v: %s", kubeBuildTimeout, tail(out))
		}
		return "", fmt.Errorf("go build in %s: %w: %s", src, err, tail(out))
	}
	if !kubeBinariesPresent(tmp) {
		return "", fmt.Errorf("go build in %s succeeded but did not write both binaries into %s", src, tmp)
	}
	// A folder left by hand without both binaries would make the rename
	// fail; we hold the lock, so nobody else is using it.
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("remove incomplete %s: %w", dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("move built binaries into %s: %w", dir, err)
	}
	progress(fmt.Sprintf("testdeps: built kube-apiserver and kube-controller-manager in %v", time.Since(start).Round(time.Second)))
	return dir, nil
}

// kubeBuildRecipe names how ensureKubeBinaries builds (flags included);
// change it when the build command changes, so the cache key does too.
const kubeBuildRecipe = "go build -ldflags version-X v2"

// kubeVersionLdflags stamps the release pinned in go.mod into the
// binaries. A plain go build leaves component-base's version at
// "v0.0.0-master+$Format:%H$" (Kubernetes' release scripts set it with -X),
// so /version, kubectl's skew checks and the version KCM and kubelets
// compare against would all see 0.0; the stamp makes them see v1.33.x as
// on a real cluster. The compatibility version (feature gates, API
// emulation) comes from a constant in component-base, not from this.
func kubeVersionLdflags(src string) (string, error) {
	b, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("read kubetools go.mod: %w", err)
	}
	var version string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == "require" { // a one-line require
			f = f[1:]
		}
		if len(f) >= 2 && f[0] == "k8s.io/kubernetes" && strings.HasPrefix(f[1], "v") {
			version = f[1]
			break
		}
	}
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 {
		return "", fmt.Errorf("kubetools go.mod has no k8s.io/kubernetes vMAJOR.MINOR.PATCH requirement (found %q)", version)
	}
	const pkg = "k8s.io/component-base/version"
	return fmt.Sprintf("-X %[1]s.gitVersion=%[2]s -X %[1]s.gitMajor=%[3]s -X %[1]s.gitMinor=%[4]s -X %[1]s.gitTreeState=clean",
		pkg, version, parts[0], parts[1]), nil
}

// kubetoolsKey hashes what decides the binaries: the module's go.mod and
// go.sum, and the version of the go command that builds them.
func kubetoolsKey(src, goBin string) (string, error) {
	h := sha256.New()
	for _, name := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return "", fmt.Errorf("read kubetools %s: %w", name, err)
		}
		fmt.Fprintf(h, "%s %d\n", name, len(b))
		h.Write(b)
	}
	ver, err := exec.Command(goBin, "env", "GOVERSION", "GOOS", "GOARCH").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	fmt.Fprintf(h, "go %s\n", strings.Join(strings.Fields(string(ver)), " "))
	fmt.Fprintf(h, "recipe %s\n", kubeBuildRecipe)
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// kubeBinariesPresent reports whether dir holds both executables.
func kubeBinariesPresent(dir string) bool {
	for _, name := range []string{kubeAPIServerBin, kubeControllerManagerBin} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil || !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// flockFile takes an exclusive flock on path (created if missing) and
// returns its release.
func flockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); _ = f.Close() }, nil
}
