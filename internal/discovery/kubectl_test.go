package discovery

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// kubectlDir is the directory holding the versioned kubectl binaries
// (kubectl.1.27 ... kubectl.1.33) next to the real kubectl.
func kubectlDir(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skipf("SKIP: kubectl not on PATH, cannot run the kubectl compatibility tests: %v", err)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatalf("resolving %s: %v", path, err)
	}
	return filepath.Dir(real)
}

// writeKubeconfig points kubectl at server over plain HTTP.
func writeKubeconfig(t *testing.T, dir, server string) string {
	t.Helper()
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: leasehold
  cluster:
    server: %s
contexts:
- name: leasehold
  context:
    cluster: leasehold
    user: anonymous
users:
- name: anonymous
  user: {}
current-context: leasehold
`, server)
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatalf("writing kubeconfig: %v", err)
	}
	return path
}

// parseTable splits kubectl's column output into one map per row keyed by
// header, using the header's column offsets (cells such as SHORTNAMES may be
// empty, so splitting on blanks would shift columns).
func parseTable(t *testing.T, out string) []map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	header := lines[0]
	names := strings.Fields(header)
	starts := make([]int, len(names))
	for i, n := range names {
		starts[i] = strings.Index(header, n)
		if starts[i] < 0 || (i > 0 && starts[i] <= starts[i-1]) {
			t.Fatalf("cannot locate column %q in header %q", n, header)
		}
	}
	var rows []map[string]string
	for _, line := range lines[1:] {
		row := map[string]string{}
		for i, n := range names {
			from, to := starts[i], len(line)
			if i+1 < len(starts) && starts[i+1] < to {
				to = starts[i+1]
			}
			if from < len(line) {
				row[n] = strings.TrimSpace(line[from:to])
			}
		}
		rows = append(rows, row)
	}
	return rows
}

func TestKubectlAPIResources(t *testing.T) {
	dir := kubectlDir(t)
	rec := newRecorder(t, newTestDiscovery(t))
	for minor := 27; minor <= 33; minor++ {
		name := fmt.Sprintf("kubectl.1.%d", minor)
		t.Run(name, func(t *testing.T) {
			bin := filepath.Join(dir, name)
			if _, err := os.Stat(bin); err != nil {
				t.Skipf("SKIP: %s not present in %s", name, dir)
			}
			rec.reset()
			home := t.TempDir()
			kubeconfig := writeKubeconfig(t, home, rec.srv.URL)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "--kubeconfig", kubeconfig, "--cache-dir", filepath.Join(home, "cache"), "api-resources")
			cmd.Env = append(os.Environ(), "HOME="+home, "KUBECONFIG="+kubeconfig)
			out, err := cmd.Output()
			if err != nil {
				var stderr string
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = string(ee.Stderr)
				}
				t.Fatalf("%s api-resources: %v\nstdout:\n%s\nstderr:\n%s", name, err, out, stderr)
			}

			rows := parseTable(t, string(out))
			want := map[string][4]string{ // name -> shortnames, apiversion, namespaced, kind
				"leases":          {"", "coordination.k8s.io/v1", "true", "Lease"},
				"leasecandidates": {"", "coordination.k8s.io/v1beta1", "true", "LeaseCandidate"},
				"nodes":           {"no", "v1", "false", "Node"},
				"namespaces":      {"ns", "v1", "false", "Namespace"},
				"events":          {"ev", "v1", "true", "Event"},
			}
			for _, row := range rows {
				w, ok := want[row["NAME"]]
				if !ok {
					t.Errorf("unexpected row %v", row)
					continue
				}
				delete(want, row["NAME"])
				if got := [4]string{row["SHORTNAMES"], row["APIVERSION"], row["NAMESPACED"], row["KIND"]}; got != w {
					t.Errorf("%s row = %v, want SHORTNAMES/APIVERSION/NAMESPACED/KIND %v", row["NAME"], got, w)
				}
			}
			if len(want) != 0 {
				t.Errorf("kubectl did not list %v; output:\n%s", want, out)
			}

			// Every kubectl from 1.27 on asks for aggregated discovery, and
			// with it needs no per-group-version documents.
			for _, r := range rec.requests() {
				t.Logf("%s GET %s Accept: %s", name, r.path, r.accept)
				if (r.path == "/api" || r.path == "/apis") && !strings.Contains(r.accept, "g=apidiscovery.k8s.io") {
					t.Errorf("%s requested %s with Accept %q, want aggregated discovery", name, r.path, r.accept)
				}
				if strings.Count(r.path, "/") >= 2 {
					t.Errorf("%s fetched legacy document %s: aggregated discovery was not used", name, r.path)
				}
			}
		})
	}
}
