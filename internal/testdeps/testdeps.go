// Package testdeps is what the suites that drive real processes share.
// It installs, on a fresh machine, the Debian packages they run (etcd,
// haproxy, Chromium, the Python Kubernetes client), because the README's
// one test command must pass on a clone with nothing but the Go toolchain,
// Node and kubectl installed; it builds the leasehold binary
// (MainWithBinary); and it runs processes for a test (Process, Server for
// `leasehold serve`, EtcdCluster), keeps their output (Lines) and finds
// free ports (FreePort), so that every suite starts, watches and stops
// them one way.
//
// Invariants: every process a test starts here is stopped by its PID when
// the test ends, and every wait is bounded. apt-get runs at most once per
// package per machine at a time (go test runs packages in parallel, and
// dpkg allows one writer, so every install holds an exclusive flock on a
// file in the temp directory); a package that cannot be installed is
// reported loudly on the test's log and in a line on stderr that survives
// `go test`'s output filtering, and the test is skipped with that reason
// rather than failing on a missing binary.
package testdeps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// installTimeout bounds one apt-get run; a stuck mirror must not hold the
// whole suite.
const installTimeout = 10 * time.Minute

// Debian returns the path of binary, installing Debian package pkg with
// apt-get when binary is not on PATH (or, when binary is an absolute path,
// such as a Python module's file, when nothing is there). When the package cannot be installed, the test is skipped
// with a message saying so.
func Debian(t testing.TB, pkg, binary string) string {
	t.Helper()
	path, err := ensure(pkg, binary)
	if err != nil {
		msg := fmt.Sprintf("NOT TESTED: Debian package %s could not be installed: %v", pkg, err)
		fmt.Fprintln(os.Stderr, msg)
		t.Skip(msg)
	}
	return path
}

func ensure(pkg, binary string) (string, error) {
	if p, ok := look(binary); ok {
		return p, nil
	}
	unlock, err := lock()
	if err != nil {
		return "", err
	}
	defer unlock()
	// Another test package may have installed it while we waited.
	if p, ok := look(binary); ok {
		return p, nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return "", errors.New("apt-get is not available on this machine")
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	install := func() ([]byte, error) {
		cmd := exec.CommandContext(ctx, "apt-get", "install", "-y", "--no-install-recommends", pkg)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		return cmd.CombinedOutput()
	}
	if _, err := install(); err != nil {
		// A fresh machine may have no package lists yet, or stale ones.
		if upd, uerr := exec.CommandContext(ctx, "apt-get", "update").CombinedOutput(); uerr != nil {
			return "", fmt.Errorf("apt-get update: %w: %s", uerr, tail(upd))
		}
		if out, err := install(); err != nil {
			return "", fmt.Errorf("apt-get install %s: %w: %s", pkg, err, tail(out))
		}
	}
	p, ok := look(binary)
	if !ok {
		return "", fmt.Errorf("apt-get installed %s but %s is still missing", pkg, binary)
	}
	return p, nil
}

func look(binary string) (string, bool) {
	if filepath.IsAbs(binary) {
		_, err := os.Stat(binary)
		return binary, err == nil
	}
	p, err := exec.LookPath(binary)
	return p, err == nil
}

// lock serializes installs across the test binaries go test runs in
// parallel.
func lock() (func(), error) {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "leasehold-testdeps.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open install lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock install lock: %w", err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); _ = f.Close() }, nil
}

func tail(b []byte) string {
	const max = 600
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}
