package testdeps

import (
	"os/exec"
	"strings"
	"testing"
)

// TestKubeBinariesBuildAndReportTheirRelease builds (or finds in the cache)
// the control-plane binaries and checks that they run and carry the
// release pinned in kubetools/go.mod rather than the unstamped v0.0.0.
func TestKubeBinariesBuildAndReportTheirRelease(t *testing.T) {
	apiserver, kcm := KubeBinaries(t)
	src, err := kubetoolsDir()
	if err != nil {
		t.Fatal(err)
	}
	ldflags, err := kubeVersionLdflags(src)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimPrefix(strings.Fields(ldflags)[1], "k8s.io/component-base/version.gitVersion=")
	for _, bin := range []string{apiserver, kcm} {
		out, err := exec.Command(bin, "--version").CombinedOutput()
		if err != nil {
			t.Fatalf("%s --version: %v: %s", bin, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != "Kubernetes "+want {
			t.Errorf("%s --version = %q, want %q", bin, got, "Kubernetes "+want)
		}
	}
	// A second call finds the binaries without building.
	a2, k2 := KubeBinaries(t)
	if a2 != apiserver || k2 != kcm {
		t.Fatalf("second KubeBinaries = %s, %s; want %s, %s", a2, k2, apiserver, kcm)
	}
}
