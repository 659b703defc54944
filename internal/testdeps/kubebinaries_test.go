package testdeps

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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

// TestBuildKubeBinariesOnceAcrossCallers builds a stand-in tool module (two
// tiny commands at the import paths of the real ones, through a local
// replace) into a cache of its own: four concurrent callers build once and
// all get the same folder; a later call builds nothing; a killed build's
// leftover folder is removed; and a module that does not build is an error
// carrying go build's output.
func TestBuildKubeBinariesOnceAcrossCallers(t *testing.T) {
	src := t.TempDir()
	writeFile(t, src, "go.mod", "module leasehold.test/fakekubetools\n\ngo 1.24.0\n\nrequire k8s.io/kubernetes v1.33.99\n\nreplace k8s.io/kubernetes => ./kk\n")
	writeFile(t, src, "kk/go.mod", "module k8s.io/kubernetes\n\ngo 1.24.0\n")
	for _, cmd := range []string{"kube-apiserver", "kube-controller-manager"} {
		writeFile(t, src, "kk/cmd/"+cmd+"/main.go", "package main\n\nfunc main() {}\n")
	}
	writeFile(t, src, "go.sum", "")
	root := t.TempDir()
	key, err := kubetoolsKey(src, "go")
	if err != nil {
		t.Fatal(err)
	}
	leftover := filepath.Join(root, key+".building-123")
	writeFile(t, leftover, "kube-apiserver", "half")

	var mu sync.Mutex
	builds := 0
	progress := func(msg string) {
		if strings.Contains(msg, "testdeps: building") {
			mu.Lock()
			builds++
			mu.Unlock()
		}
	}
	dirs := make([]string, 4)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dirs[i], errs[i] = buildKubeBinaries(src, root, progress)
		}()
	}
	wg.Wait()
	for i := range dirs {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if dirs[i] != dirs[0] {
			t.Fatalf("callers got different folders: %q", dirs)
		}
	}
	if builds != 1 {
		t.Fatalf("%d builds for 4 concurrent callers, want 1", builds)
	}
	if !kubeBinariesPresent(dirs[0]) {
		t.Fatalf("no binaries in %s", dirs[0])
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("the killed build's folder %s is still there (%v)", leftover, err)
	}
	if _, err := buildKubeBinaries(src, root, progress); err != nil || builds != 1 {
		t.Fatalf("second call: err %v, builds %d; want no new build", err, builds)
	}

	writeFile(t, src, "kk/cmd/kube-apiserver/main.go", "package main\n\nfunc main() { undefined() }\n")
	_, err = buildKubeBinaries(src, t.TempDir(), progress)
	if err == nil || !strings.Contains(err.Error(), "undefined") {
		t.Fatalf("a module that does not build: %v; want go build's error", err)
	}
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}
