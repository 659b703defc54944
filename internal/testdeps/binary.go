package testdeps

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// MainWithBinary is the TestMain of a package that drives the leasehold
// binary as a real process: it builds ./cmd/leasehold once into a
// temporary directory (the source under test, never whatever leasehold is
// on PATH), sets *binary to its path, runs the tests with goleak's check,
// removes the directory and exits with the tests' code. name prefixes its
// messages and the directory.
func MainWithBinary(m *testing.M, name string, binary *string) {
	dir, err := os.MkdirTemp("", "leasehold-"+name+"-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: temp dir: %v\n", name, err)
		os.Exit(1)
	}
	*binary = filepath.Join(dir, "leasehold")
	build := exec.Command("go", "build", "-o", *binary, "github.com/leasehold/leasehold/cmd/leasehold")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: go build ./cmd/leasehold: %v\n", name, err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(os.Stderr, "%s: removing %s: %v\n", name, dir, err)
		}
		os.Exit(code)
	}))
}
