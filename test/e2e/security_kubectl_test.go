package e2e

// The security model as kubectl users meet it, in every kubectl version the
// machine ships: `kubectl auth whoami`, `kubectl auth can-i` (one verb, and
// --list), and a least-privilege elector whose Role docs/security.md documents.

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// electorRole is the Role docs/security.md documents for `leasehold elect
// --lease kube-system/orders-writer`: create the lease, read, watch and renew
// that one lease, and record the LeaderElection events.
const electorRole = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: orders-writer-elector
  namespace: kube-system
rules:
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["create"]
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  resourceNames: ["orders-writer"]
  verbs: ["get", "update", "list", "watch"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch", "update"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: orders-writer-elector
  namespace: kube-system
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: orders-writer-elector
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: orders-elector
`

func TestSecurityKubectlAuth(t *testing.T) {
	t.Parallel()
	c := newSecCluster(t)
	nodeKC := c.credentials("node-a", "node", "node-a")
	readerKC := c.credentials("viewer", "user", "viewer", "--group", "viewers")
	adminK := newKubectl(t, newestKubectl(t), c.srv)
	adminK.run("create", "clusterrolebinding", "viewers-view", "--clusterrole=view", "--group=viewers")

	for _, bin := range kubectlBinaries(t) {
		t.Run(bin.Version, func(t *testing.T) {
			t.Parallel()
			node := newKubectl(t, bin, c.srv)
			node.kubeconfig = nodeKC
			who := node.run("auth", "whoami")
			if !strings.Contains(who, "system:node:node-a") || !strings.Contains(who, "[system:nodes system:authenticated]") {
				t.Errorf("kubectl %s auth whoami as node-a:\n%s", bin.Version, who)
			}
			canI := func(k *kubectlRunner, want string, args ...string) {
				t.Helper()
				r := k.exec("", nil, append([]string{"auth", "can-i"}, args...)...)
				if got := strings.TrimSpace(r.Stdout); got != want {
					t.Errorf("kubectl %s auth can-i %s = %q (stderr %q), want %q", bin.Version, strings.Join(args, " "), got, r.Stderr, want)
				}
				if strings.HasPrefix(want, "yes") != (r.Err == nil) {
					t.Errorf("kubectl %s auth can-i %s: exit error %v for %q", bin.Version, strings.Join(args, " "), r.Err, want)
				}
			}
			canI(node, "yes", "update", "leases/node-a", "-n", nodeLeaseNS)
			// kubectl prints the authorizer's reason after a "no".
			canI(node, "no - "+reasonOtherLease, "update", "leases/node-b", "-n", nodeLeaseNS)
			canI(node, "no - "+reasonLeaseVerbs, "list", "leases", "-n", nodeLeaseNS)
			canI(node, "no", "delete", "nodes/node-a")

			reader := newKubectl(t, bin, c.srv)
			reader.kubeconfig = readerKC
			canI(reader, "yes", "list", "leases", "-n", "kube-system")
			canI(reader, "no", "delete", "leases", "-n", "kube-system")
			list := reader.run("auth", "can-i", "--list", "-n", "kube-system")
			row := rowWith(tableRows(list), "leases.coordination.k8s.io")
			if row == nil || !strings.Contains(strings.Join(row, " "), "[get list watch]") {
				t.Errorf("kubectl %s auth can-i --list as viewer: no leases row with [get list watch]:\n%s", bin.Version, list)
			}
			if !strings.Contains(list, "selfsubjectaccessreviews.authorization.k8s.io") {
				t.Errorf("kubectl %s auth can-i --list as viewer misses the self reviews every user may create:\n%s", bin.Version, list)
			}
		})
	}
}

// TestSecurityLeastPrivilegeElector: `leasehold elect` leads with a user
// certificate that holds only the documented Role, and that user can touch
// no other lease.
func TestSecurityLeastPrivilegeElector(t *testing.T) {
	t.Parallel()
	c := newSecCluster(t)
	electorKC := c.credentials("orders-elector", "user", "orders-elector")
	adminK := newKubectl(t, newestKubectl(t), c.srv)
	adminK.runWith(electorRole, nil, "apply", "-f", "-")
	adminK.runWith(strings.Replace(leaseManifest("other-lock", "somebody", 15), nodeLeaseNS, "kube-system", 1), nil, "apply", "-f", "-")

	h := newElectHarnessOn(t, electorKC)
	h.lease = "kube-system/orders-writer"
	h.start("elector-1")
	first := h.waitStart(-1)
	if first.identity != "elector-1" {
		t.Fatalf("first leader %q", first.identity)
	}
	testdeps.Eventually(t, 20*time.Second, 200*time.Millisecond, "the lease names the elector", func() error {
		out := adminK.run("get", "lease", "orders-writer", "-n", "kube-system", "-o", "jsonpath={.spec.holderIdentity}")
		if out != "elector-1" {
			return fmt.Errorf("holder %q", out)
		}
		return nil
	})
	if out, _ := os.ReadFile(h.electors["elector-1"].out); strings.Contains(string(out), "cannot watch the lease") {
		t.Errorf("the documented Role does not let the elector watch its lease:\n%s", out)
	}
	elector := newKubectl(t, newestKubectl(t), c.srv)
	elector.kubeconfig = electorKC
	stderr := elector.fail("delete", "lease", "other-lock", "-n", "kube-system")
	want := forbiddenMsg("orders-elector", "delete", "leases", "coordination.k8s.io", "kube-system", "other-lock", "")
	if !strings.Contains(stderr, want) {
		t.Errorf("elector deleting another lease: stderr %q, want it to contain %q", stderr, want)
	}
}
