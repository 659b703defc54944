package testdeps

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPresentBinaryNeedsNoInstall(t *testing.T) {
	if p := Debian(t, "coreutils", "true"); filepath.Base(p) != "true" {
		t.Fatalf("Debian(coreutils, true) = %q", p)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if p := Debian(t, "none", self); p != self {
		t.Fatalf("absolute path: got %q, want %q", p, self)
	}
}

func TestUninstallablePackageIsAnError(t *testing.T) {
	if _, err := ensure("leasehold-no-such-package", "/nonexistent/leasehold-binary"); err == nil {
		t.Fatal("installing a package that does not exist succeeded")
	}
}
