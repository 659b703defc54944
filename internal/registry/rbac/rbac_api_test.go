package rbac_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/server/servertest"
)

// kubectl runs the newest kubectl against srv and returns its output.
func kubectl(t *testing.T, srv *servertest.Server, stdin string, args ...string) (string, error) {
	t.Helper()
	onPath, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("no kubectl on PATH")
	}
	real, err := filepath.EvalSymlinks(onPath)
	if err != nil {
		t.Skipf("resolving kubectl: %v", err)
	}
	bin := filepath.Join(filepath.Dir(real), "kubectl.1.33")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no %s", bin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", srv.Kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustKubectl(t *testing.T, srv *servertest.Server, stdin string, args ...string) string {
	t.Helper()
	out, err := kubectl(t, srv, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
	return out
}

// TestKubectlRBAC drives the four kinds with kubectl as an administrator
// would: create, get (with kube-apiserver's columns), apply, explain, and
// the roleRef immutability.
func TestKubectlRBAC(t *testing.T) {
	srv := servertest.Start(t)
	mustKubectl(t, srv, "", "create", "clusterrole", "lease-reader", "--verb=get,list,watch", "--resource=leases.coordination.k8s.io")
	mustKubectl(t, srv, "", "create", "role", "lease-writer", "-n", "default", "--verb=update", "--resource=leases.coordination.k8s.io", "--resource-name=l1")
	mustKubectl(t, srv, "", "create", "rolebinding", "writers", "-n", "default", "--role=lease-writer", "--user=alice", "--group=devs", "--serviceaccount=default:bot")
	mustKubectl(t, srv, "", "create", "clusterrolebinding", "readers", "--clusterrole=lease-reader", "--user=bob", "--user=carol")

	out := mustKubectl(t, srv, "", "get", "rolebinding", "writers", "-n", "default", "-o", "wide")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME ROLE AGE USERS GROUPS SERVICEACCOUNTS" {
		t.Fatalf("get rolebinding -o wide:\n%s", out)
	}
	if f := strings.Fields(lines[1]); len(f) != 6 || f[0] != "writers" || f[1] != "Role/lease-writer" || f[3] != "alice" || f[4] != "devs" || f[5] != "default/bot" {
		t.Errorf("row %q", lines[1])
	}
	out = mustKubectl(t, srv, "", "get", "clusterrolebinding", "readers")
	if !strings.Contains(out, "ClusterRole/lease-reader") || strings.Contains(out, "USERS") {
		t.Errorf("get clusterrolebinding:\n%s", out)
	}
	out = mustKubectl(t, srv, "", "get", "clusterrole", "lease-reader")
	if f := strings.Fields(strings.Split(out, "\n")[0]); !slices.Equal(f, []string{"NAME", "CREATED", "AT"}) {
		t.Errorf("get clusterrole header:\n%s", out)
	}

	// apply creates, then updates (client-side and server-side).
	manifest := `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: applied, namespace: default}
rules:
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [get]
`
	mustKubectl(t, srv, manifest, "apply", "-f", "-")
	mustKubectl(t, srv, strings.Replace(manifest, "[get]", "[get, list]", 1), "apply", "-f", "-")
	mustKubectl(t, srv, strings.Replace(manifest, "[get]", "[get, list, watch]", 1), "apply", "--server-side", "-f", "-")
	role, err := srv.Client.RbacV1().Roles("default").Get(context.Background(), "applied", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(role.Rules[0].Verbs, []string{"get", "list", "watch"}) {
		t.Errorf("applied verbs %v", role.Rules[0].Verbs)
	}

	out = mustKubectl(t, srv, "", "explain", "role.rules")
	if !strings.Contains(out, "PolicyRule") || !strings.Contains(out, "verbs") {
		t.Errorf("explain role.rules:\n%s", out)
	}

	// A roleRef never changes; kubectl shows upstream's message.
	out, err = kubectl(t, srv, "", "patch", "rolebinding", "writers", "-n", "default", "--type=merge", "-p", `{"roleRef":{"name":"other"}}`)
	if err == nil || !strings.Contains(out, `cannot change roleRef`) || !strings.Contains(out, `The RoleBinding "writers" is invalid: roleRef: Invalid value:`) {
		t.Errorf("roleRef change: %v\n%s", err, out)
	}
}

// TestRBACValidationOverTheAPI checks the messages a client sees, the
// defaults and PUT's create-on-update without a resourceVersion.
func TestRBACValidationOverTheAPI(t *testing.T) {
	srv := servertest.Start(t)
	ctx := context.Background()
	_, err := srv.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}}},
	}, metav1.CreateOptions{})
	servertest.WantInvalid(t, err, `ClusterRole.rbac.authorization.k8s.io "bad" is invalid: rules[0].verbs: Required value: verbs must contain at least one value`)

	_, err = srv.Client.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "b"},
		RoleRef:    rbacv1.RoleRef{Kind: "Secret", Name: "x"},
		Subjects:   []rbacv1.Subject{{Kind: "User"}},
	}, metav1.CreateOptions{})
	servertest.WantInvalid(t, err, `roleRef.kind: Unsupported value: "Secret": supported values: "Role", "ClusterRole"`, `subjects[0].name: Required value`)

	// Names are path segments: colons are fine.
	b, err := srv.Client.RbacV1().ClusterRoleBindings().Update(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "system:example"},
		RoleRef:    rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: "Group", Name: "g"}},
	}, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("create by PUT: %v", err)
	}
	if b.RoleRef.APIGroup != rbacv1.GroupName || b.Subjects[0].APIGroup != rbacv1.GroupName {
		t.Errorf("defaults not applied: %+v", b)
	}
	// An unconditional update (no resourceVersion) is allowed, as upstream.
	b.ResourceVersion = ""
	b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: "User", Name: "u"})
	if _, err := srv.Client.RbacV1().ClusterRoleBindings().Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("unconditional update: %v", err)
	}
	b.RoleRef.Name = "edit"
	_, err = srv.Client.RbacV1().ClusterRoleBindings().Update(ctx, b, metav1.UpdateOptions{})
	servertest.WantInvalid(t, err, `roleRef: Invalid value: {"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"}: cannot change roleRef`)
}

// TestRBACDiscovery: the group is discovered with every verb and no short
// names, as kube-apiserver serves it.
func TestRBACDiscovery(t *testing.T) {
	srv := servertest.Start(t)
	list, err := srv.Client.Discovery().ServerResourcesForGroupVersion("rbac.authorization.k8s.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"roles": true, "rolebindings": true, "clusterroles": false, "clusterrolebindings": false}
	for _, r := range list.APIResources {
		namespaced, ok := want[r.Name]
		if !ok {
			t.Errorf("unexpected resource %s", r.Name)
			continue
		}
		delete(want, r.Name)
		if r.Namespaced != namespaced || len(r.ShortNames) != 0 || !slices.Contains(r.Verbs, "watch") || !slices.Contains(r.Verbs, "deletecollection") {
			t.Errorf("%s: %+v", r.Name, r)
		}
	}
	if len(want) > 0 {
		t.Errorf("missing %v", want)
	}
}
