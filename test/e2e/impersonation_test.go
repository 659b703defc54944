package e2e

// kubectl --as against Leasehold itself: Impersonate-* headers act as the
// named user once the caller may impersonate it, are refused with
// kube-apiserver's 403 otherwise, and the audit log keeps both users.

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

func TestImpersonationWithKubectl(t *testing.T) {
	t.Parallel()
	logPath := filepath.Join(t.TempDir(), "audit.log")
	c := newSecCluster(t, "--audit-log-path", logPath)
	viewerKC := c.credentials("viewer", "user", "viewer", "--group", "viewers")
	adminK := newKubectl(t, newestKubectl(t), c.srv)
	adminK.run("create", "clusterrolebinding", "viewers-view", "--clusterrole=view", "--group=viewers")
	adminK.runWith(leaseManifest("node-b", "node-b", 40), nil, "apply", "-f", "-")

	asNode := []string{"--as=system:node:node-a", "--as-group=system:nodes"}
	// The versions run in parallel inside one group, which returns when
	// they all have, before the server stops.
	t.Run("kubectl", func(t *testing.T) {
		for _, bin := range kubectlBinaries(t) {
			t.Run(bin.Version, func(t *testing.T) {
				t.Parallel()
				admin := newKubectl(t, bin, c.srv)
				who := admin.run(append([]string{"auth", "whoami"}, asNode...)...)
				if !strings.Contains(who, "system:node:node-a") || !strings.Contains(who, "[system:nodes system:authenticated]") {
					t.Errorf("kubectl %s auth whoami %v:\n%s", bin.Version, asNode, who)
				}
				// The impersonated node meets the Node authorizer like a real one.
				msg := admin.fail(append([]string{"get", "lease", "node-b", "-n", nodeLeaseNS}, asNode...)...)
				if want := forbiddenMsg("system:node:node-a", "get", "leases", "coordination.k8s.io", nodeLeaseNS, "node-b", reasonOtherLease); !strings.Contains(msg, want) {
					t.Errorf("kubectl %s get another node's lease as node-a:\n%s\nwant %s", bin.Version, msg, want)
				}
				if out := admin.run("get", "lease", "node-b", "-n", nodeLeaseNS, "--as=system:node:node-b", "--as-group=system:nodes", "-o", "name"); strings.TrimSpace(out) != "lease.coordination.k8s.io/node-b" {
					t.Errorf("kubectl %s get its own lease as node-b: %q", bin.Version, out)
				}
				// A user RBAC does not let impersonate is refused for the user
				// it asked to be, with kube-apiserver's wording. (get --raw:
				// a plain get first fails kubectl's discovery, and kubectl
				// prints a refused discovery as "Forbidden: unknown", as
				// with kube-apiserver.)
				viewer := newKubectl(t, bin, c.srv)
				viewer.kubeconfig = viewerKC
				msg = viewer.fail("get", "--raw", leasePath(nodeLeaseNS, ""), "--as=bob")
				if want := `users "bob" is forbidden: User "viewer" cannot impersonate resource "users" in API group "" at the cluster scope`; !strings.Contains(msg, want) {
					t.Errorf("kubectl %s --as=bob as viewer:\n%s\nwant %s", bin.Version, msg, want)
				}
				msg = viewer.fail("get", "--raw", leasePath(nodeLeaseNS, ""), "--as=system:serviceaccount:kube-system:default")
				if want := `serviceaccounts "default" is forbidden: User "viewer" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "kube-system"`; !strings.Contains(msg, want) {
					t.Errorf("kubectl %s --as a service account as viewer:\n%s\nwant %s", bin.Version, msg, want)
				}
			})
		}
	})

	c.srv.Stop()
	events := readAuditLog(t, logPath)
	ev := findEvent(t, events, "the admin's read as node-b", func(e *auditv1.Event) bool {
		return e.Verb == "get" && e.ObjectRef != nil && e.ObjectRef.Name == "node-b" && e.ImpersonatedUser != nil && e.ImpersonatedUser.Username == "system:node:node-b"
	})
	if !slices.Contains(ev.User.Groups, "system:masters") || !slices.Equal(ev.ImpersonatedUser.Groups, []string{"system:nodes", "system:authenticated"}) {
		t.Errorf("audit of an impersonated read: user %+v, impersonatedUser %+v; want the admin acting as node-b", ev.User, *ev.ImpersonatedUser)
	}
	if ev.ResponseStatus == nil || ev.ResponseStatus.Code != 200 {
		t.Errorf("audit of an impersonated read: response %+v", ev.ResponseStatus)
	}
	denied := findEvent(t, events, "the viewer's refused impersonation", func(e *auditv1.Event) bool {
		return e.User.Username == "viewer" && e.ResponseStatus != nil && e.ResponseStatus.Code == 403 && e.ImpersonatedUser == nil
	})
	if denied.Annotations["authorization.k8s.io/decision"] != "forbid" {
		t.Errorf("audit of a refused impersonation: annotations %v", denied.Annotations)
	}
}
