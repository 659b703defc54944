package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testdeps/kubecluster"
)

// kubectlThroughCluster drives leases through kube-apiserver with every
// kubectl on the machine: create, get -o wide, patch, watch, auth can-i
// (decided by the cluster), delete.
func kubectlThroughCluster(t *testing.T, b *behind) {
	for _, v := range kubecluster.KubectlVersions(t) {
		t.Run("kubectl "+v, func(t *testing.T) {
			t.Parallel()
			kubectlVersionThroughCluster(t, b, v)
		})
	}
}

func kubectlVersionThroughCluster(t *testing.T, b *behind, v string) {
	name := "kubectl-" + strings.ReplaceAll(v, ".", "-")
	if v == "" {
		name = "kubectl-default"
	}
	k := func(args ...string) string {
		t.Helper()
		out, err := b.kc.Kubectl(t, v, args...)
		if err != nil {
			t.Fatalf("kubectl %s %s: %v", v, strings.Join(args, " "), err)
		}
		return out
	}
	manifest := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(manifest, []byte(fmt.Sprintf(`apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: %s
  namespace: default
spec:
  holderIdentity: %s-holder
  leaseDurationSeconds: 30
`, name, name)), 0o600); err != nil {
		t.Fatal(err)
	}
	k("apply", "-f", manifest)
	if out := k("get", "lease", name, "-n", "default", "-o", "wide"); !strings.Contains(out, name+"-holder") {
		t.Errorf("kubectl %s get -o wide:\n%s", v, out)
	}
	if out := k("get", "leases", "-A"); !strings.Contains(out, "node-a") || !strings.Contains(out, name) {
		t.Errorf("kubectl %s get leases -A:\n%s", v, out)
	}
	// A watch sees a strategic merge patch of the lease.
	var (
		wg       sync.WaitGroup
		watchOut string
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		watchOut, _ = b.kc.Kubectl(t, v, "get", "lease", name, "-n", "default", "--watch", "--output-watch-events", "--request-timeout=4s", "-o", "custom-columns=EVENT:.type,HOLDER:.object.spec.holderIdentity", "--no-headers")
	}()
	time.Sleep(1500 * time.Millisecond)
	k("patch", "lease", name, "-n", "default", "--type", "strategic", "-p", `{"spec":{"holderIdentity":"patched"}}`)
	wg.Wait()
	if !strings.Contains(watchOut, "MODIFIED") || !strings.Contains(watchOut, "patched") {
		t.Errorf("kubectl %s watch did not see the patch:\n%s", v, watchOut)
	}
	if out := k("auth", "can-i", "update", "leases/node-a", "-n", nodeLeaseNS, "--as", "system:node:node-a", "--as-group", "system:nodes"); strings.TrimSpace(out) != "yes" {
		t.Errorf("kubectl %s auth can-i for node-a's own lease: %q", v, out)
	}
	if out, _ := b.kc.Kubectl(t, v, "auth", "can-i", "update", "leases/node-b", "-n", nodeLeaseNS, "--as", "system:node:node-a", "--as-group", "system:nodes"); !strings.HasPrefix(strings.TrimSpace(out), "no") {
		t.Errorf("kubectl %s auth can-i for another node's lease: %q", v, out)
	}
	k("delete", "lease", name, "-n", "default")
}
