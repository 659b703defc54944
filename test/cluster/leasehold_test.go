package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/leasehold/leasehold/internal/testdeps"
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

// startBehind starts a cluster (with kube-controller-manager), starts
// Leasehold for it and routes coordination.k8s.io/v1 to it.
func startBehind(t *testing.T) *behind {
	t.Helper()
	return startBehindWith(t, kubecluster.Options{ControllerManager: true})
}

// startBehindWith is startBehind for a cluster started with opts.
func startBehindWith(t *testing.T, opts kubecluster.Options) *behind {
	t.Helper()
	kc := kubecluster.Start(t, opts)
	b := startLeaseholdFor(t, kc, true)
	b.route()
	return b
}

// startLeaseholdFor grants Leasehold what delegation needs in kc and
// starts it in cluster mode, not yet routed to, with an audit log when
// audited.
func startLeaseholdFor(t testing.TB, kc *kubecluster.Cluster, audited bool) *behind {
	t.Helper()
	b := &behind{t: t, kc: kc, port: testdeps.FreePort(t), dataDir: filepath.Join(t.TempDir(), "data"), audit: filepath.Join(t.TempDir(), "audit.log")}
	grantDelegation(t, kc)
	kubeconfig := kc.UserKubeconfig(t, leaseholdUser, "system:serviceaccounts", "system:serviceaccounts:kube-system")
	// The serving certificate Leasehold issues itself from the CA in its
	// data dir, for the name kube-apiserver dials it by; that CA is the
	// APIService's caBundle.
	args := []string{"serve", "--data-dir", b.dataDir, "--secure-port", strconv.Itoa(b.port),
		"--tls-san", kubecluster.RouteOptions{}.ServerName(),
		"--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig}
	if audited {
		args = append(args, "--audit-log-path", b.audit)
	}
	b.serve = startProc(t, "serve", args...)
	b.waitServing()
	caPEM, err := os.ReadFile(filepath.Join(b.dataDir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	b.caPEM = caPEM
	b.viaCluster = kc.AdminClientset(t)
	return b
}

// route points APIService v1.coordination.k8s.io at Leasehold.
func (b *behind) route() {
	b.t.Helper()
	b.kc.RouteGroupVersion(b.t, kubecluster.RouteOptions{Port: b.port, CABundle: b.caPEM})
}

// adminKubeconfig talks to Leasehold directly as its own admin.
func (b *behind) adminKubeconfig() string { return filepath.Join(b.dataDir, "admin.kubeconfig") }

// waitServing waits until Leasehold answers /readyz to its admin.
func (b *behind) waitServing() {
	b.t.Helper()
	testdeps.Eventually(b.t, 60*time.Second, 200*time.Millisecond, "leasehold serves", func() error {
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

// grantDelegation applies deploy/rbac.yaml, the RBAC the procedure of
// docs/take-lease-load-off-etcd.md applies: TokenReviews and
// SubjectAccessReviews (system:auth-delegator),
// the front-proxy settings (extension-apiserver-authentication-reader), and
// reading the namespaces and RBAC objects Leasehold decides with, for the
// service account kube-system/leasehold whose identity the test's
// Leasehold uses.
func grantDelegation(t testing.TB, kc *kubecluster.Cluster) {
	t.Helper()
	if out, err := kc.Kubectl(t, "", "apply", "-f", filepath.Join("..", "..", "deploy", "rbac.yaml")); err != nil {
		t.Fatalf("kubectl apply -f deploy/rbac.yaml: %v\n%s", err, out)
	}
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
