package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/leasehold/leasehold/internal/testdeps/kubecluster"
)

// leaseholdUser is the identity Leasehold uses towards the cluster: the
// service account deploy/ runs it as.
const leaseholdUser = "system:serviceaccount:kube-system:leasehold"

// behind is a `leasehold serve` in cluster mode and the cluster it serves
// behind.
type behind struct {
	t       testing.TB
	kc      *kubecluster.Cluster
	port    int
	dataDir string
	audit   string
	serve   *proc
	// direct talks to Leasehold itself with its own admin credentials,
	// bypassing kube-apiserver: what is stored there, and only there.
	direct kubernetes.Interface
	// viaCluster talks to kube-apiserver as the cluster's admin.
	viaCluster kubernetes.Interface
	caPEM      []byte
}

// startBehind starts a cluster (with kube-controller-manager), grants
// Leasehold what delegation needs, starts it and routes
// coordination.k8s.io/v1 to it.
func startBehind(t *testing.T) *behind {
	t.Helper()
	kc := kubecluster.Start(t, kubecluster.Options{ControllerManager: true})
	b := &behind{t: t, kc: kc, port: freePort(t), dataDir: filepath.Join(t.TempDir(), "data"), audit: filepath.Join(t.TempDir(), "audit.log")}
	grantDelegation(t, kc)
	route := kubecluster.RouteOptions{}
	kubeconfig := kc.UserKubeconfig(t, leaseholdUser, "system:serviceaccounts", "system:serviceaccounts:kube-system")
	// The serving certificate Leasehold issues itself from the CA in its
	// data dir, for the name kube-apiserver dials it by; that CA is the
	// APIService's caBundle.
	b.serve = startProc(t, "serve",
		"serve", "--data-dir", b.dataDir, "--secure-port", strconv.Itoa(b.port),
		"--tls-san", route.ServerName(),
		"--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig,
		"--audit-log-path", b.audit)
	b.waitServing()
	caPEM, err := os.ReadFile(filepath.Join(b.dataDir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	b.caPEM = caPEM
	b.viaCluster = kc.AdminClientset(t)
	kc.RouteGroupVersion(t, kubecluster.RouteOptions{Port: b.port, CABundle: b.caPEM})
	return b
}

// waitServing waits until Leasehold answers /readyz to its admin.
func (b *behind) waitServing() {
	b.t.Helper()
	eventually(b.t, 60*time.Second, "leasehold serves", func() error {
		if b.direct == nil {
			cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(b.dataDir, "admin.kubeconfig"))
			if err != nil {
				return err
			}
			c, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			b.direct = c
		}
		_, err := b.direct.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		return err
	})
}

// grantDelegation gives Leasehold's identity what serving behind a
// cluster needs, as deploy/ does: TokenReviews and SubjectAccessReviews
// (system:auth-delegator), the front-proxy settings
// (extension-apiserver-authentication-reader), and reading the namespaces
// and RBAC objects it decides with.
func grantDelegation(t testing.TB, kc *kubecluster.Cluster) {
	t.Helper()
	c := kc.AdminClientset(t)
	ctx := context.Background()
	sa := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "leasehold", Namespace: "kube-system"}}
	must := func(what string, err error) {
		t.Helper()
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("%s: %v", what, err)
		}
	}
	_, err := c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "leasehold:system:auth-delegator"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:auth-delegator"},
		Subjects:   sa,
	}, metav1.CreateOptions{})
	must("auth-delegator binding", err)
	_, err = c.RbacV1().RoleBindings("kube-system").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "leasehold-auth-reader", Namespace: "kube-system"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "extension-apiserver-authentication-reader"},
		Subjects:   sa,
	}, metav1.CreateOptions{})
	must("authentication reader binding", err)
	_, err = c.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "leasehold:watch"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles", "clusterrolebindings", "roles", "rolebindings"}, Verbs: []string{"get", "list", "watch"}},
		},
	}, metav1.CreateOptions{})
	must("watch role", err)
	_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "leasehold:watch"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "leasehold:watch"},
		Subjects:   sa,
	}, metav1.CreateOptions{})
	must("watch binding", err)
}

// agent starts `leasehold agent` for node with the credentials the
// cluster issued it, renewing every 2 s (an 8 s lease).
func (b *behind) agent(node string) *proc {
	b.t.Helper()
	return startProc(b.t, "agent-"+node, "agent", "--node", node, "--kubeconfig", b.kc.NodeKubeconfig(b.t, node),
		"--node-lease-duration-seconds", "8")
}

// leaseholdKubeconfigFor writes a kubeconfig that talks to Leasehold
// directly (not through kube-apiserver) with another kubeconfig's client
// credentials: how a caller that bypasses the aggregator is treated.
func (b *behind) leaseholdKubeconfigFor(t testing.TB, kubeconfig string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "leasehold-ca.crt")
	if err := os.WriteFile(caFile, b.caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = fmt.Sprintf("https://127.0.0.1:%d", b.port)
		c.CertificateAuthorityData, c.CertificateAuthority = nil, caFile
	}
	out := filepath.Join(t.TempDir(), "direct.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, out); err != nil {
		t.Fatal(err)
	}
	return out
}
