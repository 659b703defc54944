package kubecluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// Timeouts. The machine running these tests may be a shared 2-core box,
// where kube-apiserver alone takes 15-40 s to become ready.
const (
	etcdStartTimeout      = 30 * time.Second
	apiserverStartTimeout = 3 * time.Minute
	kcmStartTimeout       = 2 * time.Minute
	// apiserverStopGrace covers kube-apiserver's graceful shutdown (it
	// drains requests and runs its pre-shutdown hooks; a few seconds).
	apiserverStopGrace = 30 * time.Second
	otherStopGrace     = 15 * time.Second
	// startAttempts bounds the retries on new ports when a port found free
	// was taken by another process before ours bound it.
	startAttempts = 3
	logTailLines  = 60
)

// ServiceClusterIPRange is the --service-cluster-ip-range of every test
// cluster; its first address (10.96.0.1) is the kubernetes Service's
// ClusterIP and is in kube-apiserver's serving certificate.
const ServiceClusterIPRange = "10.96.0.0/16"

// AdminUser is the user of AdminKubeconfig (in group system:masters).
const AdminUser = "kubecluster-admin"

// Options configure Start.
type Options struct {
	// ControllerManager also starts kube-controller-manager (leader
	// election on, every default controller, service-account credentials).
	ControllerManager bool
	// NodeMonitorGracePeriod is kube-controller-manager's
	// --node-monitor-grace-period: how long a node may miss lease renewals
	// before the node lifecycle controller marks it Unknown. Zero means
	// 20s, short so that tests of node failure are quick (the Kubernetes
	// default is 50s).
	NodeMonitorGracePeriod time.Duration
	// APIServerFlags and ControllerManagerFlags are appended to the
	// harness's flags; a flag given again overrides the harness's value.
	APIServerFlags         []string
	ControllerManagerFlags []string
}

// Cluster is a running test control plane. Its fields do not change after
// Start (kube-apiserver keeps its port across restarts).
type Cluster struct {
	// URL is kube-apiserver's address, https://127.0.0.1:PORT.
	URL string
	// Dir is the data directory: certificates, keys, kubeconfigs, etcd's
	// data and every process's log (logs/*.log).
	Dir string
	// EtcdURL is etcd's client URL (plain HTTP on 127.0.0.1).
	EtcdURL string
	// AdminKubeconfig is a kubeconfig for AdminUser (system:masters).
	AdminKubeconfig string
	// CAFile and CAKeyFile are the cluster CA: it signs kube-apiserver's
	// serving certificate and every client certificate kube-apiserver
	// accepts (--client-ca-file), and kube-controller-manager signs CSRs
	// with it.
	CAFile, CAKeyFile string
	// FrontProxyCAFile is --requestheader-client-ca-file: the CA of the
	// certificate kube-apiserver presents to aggregated servers
	// (FrontProxyClientCertFile, CN front-proxy-client). An aggregated
	// server verifies that certificate against this CA.
	FrontProxyCAFile                            string
	FrontProxyClientCertFile, FrontProxyKeyFile string
	// ServiceAccountKeyFile is the private key that signs service account
	// tokens; ServiceAccountPublicKeyFile verifies them.
	ServiceAccountKeyFile, ServiceAccountPublicKeyFile string

	t         testing.TB
	opts      Options
	ca        *authority
	servingCA *authority
	etcd      *process
	apiserver *process
	kcm       *process
	kcmKube   string // kube-controller-manager's kubeconfig
	port      int    // kube-apiserver's secure port
	stopOnce  sync.Once

	mu      sync.Mutex
	counter int // numbers issued files so that names never collide
}

// Start starts etcd, kube-apiserver and (when opts.ControllerManager)
// kube-controller-manager as processes, waits until they serve, and
// registers their stop with t.Cleanup. The binaries come from
// testdeps.KubeBinaries and Debian's etcd-server package; the test is
// skipped, with a NOT TESTED line, when they are unavailable.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	apiserverBin, kcmBin := testdeps.KubeBinaries(t)
	etcdBin := testdeps.Debian(t, "etcd-server", "etcd")
	if opts.NodeMonitorGracePeriod == 0 {
		opts.NodeMonitorGracePeriod = 20 * time.Second
	}
	c := &Cluster{t: t, opts: opts, Dir: t.TempDir()}
	for _, sub := range []string{"pki", "logs", "kubeconfigs"} {
		if err := os.MkdirAll(filepath.Join(c.Dir, sub), 0o755); err != nil {
			t.Fatalf("kubecluster: %v", err)
		}
	}
	if err := c.writePKI(); err != nil {
		t.Fatalf("kubecluster: certificates: %v", err)
	}
	c.etcd = &process{name: "etcd", bin: etcdBin, logPath: filepath.Join(c.Dir, "logs", "etcd.log")}
	c.apiserver = &process{name: "kube-apiserver", bin: apiserverBin, logPath: filepath.Join(c.Dir, "logs", "kube-apiserver.log")}
	c.kcm = &process{name: "kube-controller-manager", bin: kcmBin, logPath: filepath.Join(c.Dir, "logs", "kube-controller-manager.log")}
	t.Cleanup(c.Stop)
	// Registered after Stop, so it runs before it (cleanups run last
	// first): the tails show the processes as they were at the failure.
	t.Cleanup(func() {
		if t.Failed() {
			c.logTails(t)
		}
	})
	if err := c.startEtcd(); err != nil {
		t.Fatalf("kubecluster: %v", err)
	}
	if err := c.startAPIServer(); err != nil {
		t.Fatalf("kubecluster: %v", err)
	}
	if opts.ControllerManager {
		c.StartControllerManager(t)
	}
	return c
}

// writePKI creates the cluster CA, the front-proxy CA, the CA for
// aggregated servers' serving certificates and every certificate the
// control plane needs.
func (c *Cluster) writePKI() error {
	dir := filepath.Join(c.Dir, "pki")
	var err error
	if c.ca, err = newAuthority(dir, "ca", "kubecluster-ca"); err != nil {
		return err
	}
	c.CAFile, c.CAKeyFile = c.ca.CertFile, c.ca.KeyFile
	// A CA of its own for the front proxy, as Kubernetes' documentation
	// asks: a client certificate from the cluster CA must not be able to
	// pose as the aggregator and assert any identity in X-Remote-User.
	fp, err := newAuthority(dir, "front-proxy-ca", "kubecluster-front-proxy-ca")
	if err != nil {
		return err
	}
	c.FrontProxyCAFile = fp.CertFile
	if c.FrontProxyClientCertFile, c.FrontProxyKeyFile, err = fp.issueFiles(dir, "front-proxy-client",
		leaf{cn: "front-proxy-client", usages: clientUsage}); err != nil {
		return err
	}
	// Aggregated servers get serving certificates from yet another CA,
	// the one their APIService's caBundle names; see IssueServingCert.
	if c.servingCA, err = newAuthority(dir, "aggregated-serving-ca", "kubecluster-aggregated-serving-ca"); err != nil {
		return err
	}
	if _, _, err = c.ca.issueFiles(dir, "apiserver", leaf{
		cn:     "kube-apiserver",
		dns:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		ips:    []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 96, 0, 1)},
		usages: serverUsage,
	}); err != nil {
		return err
	}
	c.ServiceAccountKeyFile, c.ServiceAccountPublicKeyFile, err = writeServiceAccountKeys(dir)
	return err
}

// startEtcd starts a single-member etcd on free ports, again on new ports
// when one was taken before etcd bound it.
func (c *Cluster) startEtcd() error {
	for attempt := 1; ; attempt++ {
		client := fmt.Sprintf("http://127.0.0.1:%d", pickPort(c.t, "etcd", attempt))
		peer := fmt.Sprintf("http://127.0.0.1:%d", pickPort(c.t, "etcd-peer", attempt))
		c.etcd.args = []string{
			"--name", "kubecluster", "--data-dir", filepath.Join(c.Dir, "etcd"),
			"--listen-client-urls", client, "--advertise-client-urls", client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", "kubecluster=" + peer, "--initial-cluster-state", "new",
			"--initial-cluster-token", "kubecluster",
		}
		if err := c.etcd.start(); err != nil {
			return err
		}
		// Another process answering /health on a port we chose would look
		// healthy: EtcdMemberServes also checks the member's peer URL.
		err := waitUntil(etcdStartTimeout, c.etcd, func() bool { return testdeps.EtcdMemberServes(client, peer) })
		if err == nil {
			c.EtcdURL = client
			return nil
		}
		if !errors.Is(err, errExited) || attempt == startAttempts {
			return fmt.Errorf("etcd did not serve on %s: %w; log:\n%s", client, err, c.etcd.tail(logTailLines))
		}
		c.t.Logf("kubecluster: etcd exited at start (port taken meanwhile?); again on new ports")
		_ = os.RemoveAll(filepath.Join(c.Dir, "etcd"))
	}
}

// startAPIServer starts kube-apiserver on a free port, again on a new port
// when that one was taken before kube-apiserver bound it, and waits for
// /readyz.
func (c *Cluster) startAPIServer() error {
	for attempt := 1; ; attempt++ {
		c.port = pickPort(c.t, "kube-apiserver", attempt)
		c.URL = fmt.Sprintf("https://127.0.0.1:%d", c.port)
		c.apiserver.args = c.apiserverArgs()
		if err := c.writeKubeconfigs(); err != nil {
			return err
		}
		err := c.runAPIServer()
		if err == nil {
			return nil
		}
		if !errors.Is(err, errExited) || !c.apiserver.logContains("address already in use") || attempt == startAttempts {
			return err
		}
		c.t.Logf("kubecluster: kube-apiserver could not bind port %d (taken meanwhile); again on a new port", c.port)
	}
}

// runAPIServer starts kube-apiserver with its current arguments and waits
// until /readyz answers 200.
func (c *Cluster) runAPIServer() error {
	if err := c.apiserver.start(); err != nil {
		return err
	}
	client, err := c.adminHTTPClient()
	if err != nil {
		return err
	}
	defer client.CloseIdleConnections()
	if err := waitUntil(apiserverStartTimeout, c.apiserver, func() bool { return getOK(client, c.URL+"/readyz") }); err != nil {
		return fmt.Errorf("kube-apiserver (pid %d) not ready at %s: %w; log:\n%s", c.apiserver.pid(), c.URL, err, c.apiserver.tail(logTailLines))
	}
	return nil
}

// apiserverArgs are kube-apiserver's flags; see the package comment for
// why each non-obvious one is there.
func (c *Cluster) apiserverArgs() []string {
	pki := filepath.Join(c.Dir, "pki")
	args := []string{
		"--etcd-servers=" + c.EtcdURL,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", c.port),
		"--advertise-address=127.0.0.1",
		"--cert-dir=" + filepath.Join(c.Dir, "apiserver-certs"),
		"--tls-cert-file=" + filepath.Join(pki, "apiserver.crt"),
		"--tls-private-key-file=" + filepath.Join(pki, "apiserver.key"),
		"--client-ca-file=" + c.CAFile,
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--requestheader-client-ca-file=" + c.FrontProxyCAFile,
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + c.FrontProxyClientCertFile,
		"--proxy-client-key-file=" + c.FrontProxyKeyFile,
		// ClusterIP resolution, which is also the only mode in which an
		// ExternalName Service can back an APIService (RouteGroupVersion).
		"--enable-aggregator-routing=false",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + c.ServiceAccountPublicKeyFile,
		"--service-account-signing-key-file=" + c.ServiceAccountKeyFile,
		"--service-cluster-ip-range=" + ServiceClusterIPRange,
		// The default (lease) endpoint reconciler would publish
		// 127.0.0.1 as the kubernetes Service's endpoint, and every 10 s
		// logs `Endpoints "kubernetes" is invalid: ... "127.0.0.1": may
		// not be in the loopback range`. Nothing here dials that Service
		// through kube-proxy, and the aggregator resolves
		// kubernetes.default.svc to its loopback by itself.
		"--endpoint-reconciler-type=none",
		"--profiling=false",
		// Without it kube-apiserver leaves open watches alone on SIGTERM
		// (its own, and those it proxies to an aggregated server), and
		// its HTTP server's shutdown waits for them until its request
		// timeout: RestartAPIServer took 30 s (and a SIGKILL) with
		// kube-controller-manager's lease informers proxied to Leasehold.
		// Production control planes set it for the same reason.
		"--shutdown-watch-termination-grace-period=5s",
	}
	return append(args, c.opts.APIServerFlags...)
}

// writeKubeconfigs writes the admin and kube-controller-manager
// kubeconfigs for the current URL.
func (c *Cluster) writeKubeconfigs() error {
	var err error
	if c.AdminKubeconfig, err = c.clientKubeconfig("admin", AdminUser, []string{"system:masters"}); err != nil {
		return err
	}
	c.kcmKube, err = c.clientKubeconfig("kube-controller-manager", "system:kube-controller-manager", nil)
	return err
}

// clientKubeconfig issues a client certificate from the cluster CA for
// user in groups and writes a kubeconfig for it to
// kubeconfigs/<name>.kubeconfig.
func (c *Cluster) clientKubeconfig(name, user string, groups []string) (string, error) {
	certPEM, keyPEM, err := c.ca.issue(leaf{cn: user, orgs: groups, usages: clientUsage})
	if err != nil {
		return "", err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubecluster"] = &clientcmdapi.Cluster{Server: c.URL, CertificateAuthorityData: c.ca.certPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts["kubecluster"] = &clientcmdapi.Context{Cluster: "kubecluster", AuthInfo: user}
	cfg.CurrentContext = "kubecluster"
	path := filepath.Join(c.Dir, "kubeconfigs", name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return path, nil
}

// NodeKubeconfig returns a kubeconfig for the kubelet of node: a client
// certificate from the cluster CA with CN system:node:<node> and O
// system:nodes, the identity kube-apiserver's Node authorizer and
// NodeRestriction admission act on, as a kubelet gets it by TLS bootstrap.
func (c *Cluster) NodeKubeconfig(t testing.TB, node string) string {
	t.Helper()
	return c.UserKubeconfig(t, "system:node:"+node, "system:nodes")
}

// UserKubeconfig returns a kubeconfig for user in groups (client
// certificate from the cluster CA: CN user, O groups). The user has no
// permissions beyond those RBAC gives its name and groups.
func (c *Cluster) UserKubeconfig(t testing.TB, user string, groups ...string) string {
	t.Helper()
	c.mu.Lock()
	c.counter++
	name := fmt.Sprintf("user-%d-%s", c.counter, strings.NewReplacer(":", "_", "/", "_").Replace(user))
	c.mu.Unlock()
	path, err := c.clientKubeconfig(name, user, groups)
	if err != nil {
		t.Fatalf("kubecluster: kubeconfig for %s: %v", user, err)
	}
	return path
}

// RESTConfig is the client configuration of a kubeconfig this cluster
// wrote (AdminKubeconfig, NodeKubeconfig, UserKubeconfig).
func (c *Cluster) RESTConfig(t testing.TB, kubeconfig string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("kubecluster: loading %s: %v", kubeconfig, err)
	}
	return cfg
}

// Clientset is a typed client for kubeconfig.
func (c *Cluster) Clientset(t testing.TB, kubeconfig string) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.RESTConfig(t, kubeconfig))
	if err != nil {
		t.Fatalf("kubecluster: client for %s: %v", kubeconfig, err)
	}
	return cs
}

// AdminClientset is a typed client for AdminKubeconfig.
func (c *Cluster) AdminClientset(t testing.TB) *kubernetes.Clientset {
	t.Helper()
	return c.Clientset(t, c.AdminKubeconfig)
}

// EtcdPID, APIServerPID and ControllerManagerPID are the process ids of
// the current (or last) run of each process; 0 for one never started.
func (c *Cluster) EtcdPID() int              { return c.etcd.pid() }
func (c *Cluster) APIServerPID() int         { return c.apiserver.pid() }
func (c *Cluster) ControllerManagerPID() int { return c.kcm.pid() }

// LogFiles are the log files of etcd, kube-apiserver and
// kube-controller-manager, by process name.
func (c *Cluster) LogFiles() map[string]string {
	return map[string]string{c.etcd.name: c.etcd.logPath, c.apiserver.name: c.apiserver.logPath, c.kcm.name: c.kcm.logPath}
}

// RestartAPIServer stops kube-apiserver (SIGTERM to its pid, SIGKILL after
// a bounded grace) and starts it again with the same flags, port and etcd,
// then waits for /readyz.
func (c *Cluster) RestartAPIServer(t testing.TB) {
	t.Helper()
	if err := c.apiserver.stop(apiserverStopGrace); err != nil {
		if !errors.Is(err, errKilled) {
			t.Fatalf("kubecluster: stopping kube-apiserver: %v", err)
		}
		t.Logf("kubecluster: %v", err)
	}
	if err := c.runAPIServer(); err != nil {
		t.Fatalf("kubecluster: restarting kube-apiserver: %v", err)
	}
}

// StartControllerManager starts kube-controller-manager and waits until its
// /healthz answers (not until it leads: see WaitControllerManagerLeader).
// It must not be running.
func (c *Cluster) StartControllerManager(t testing.TB) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		port := pickPort(t, "kube-controller-manager", attempt)
		c.kcm.args = c.kcmArgs(port)
		err := c.runControllerManager(port)
		if err == nil {
			return
		}
		if !errors.Is(err, errExited) || !c.kcm.logContains("address already in use") || attempt == startAttempts {
			t.Fatalf("kubecluster: %v", err)
		}
		t.Logf("kubecluster: kube-controller-manager could not bind port %d (taken meanwhile); again on a new port", port)
	}
}

func (c *Cluster) runControllerManager(port int) error {
	if err := c.kcm.start(); err != nil {
		return err
	}
	// It serves with a certificate it generates into --cert-dir (leaf and
	// its own CA in one file) before it listens. Trusting only that file
	// tells our process from another kube-controller-manager that took the
	// port meanwhile: that one would answer /healthz too.
	certFile := filepath.Join(c.Dir, "kcm-certs", "kube-controller-manager.crt")
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
	var client *http.Client
	defer func() {
		if client != nil {
			client.CloseIdleConnections()
		}
	}()
	if err := waitUntil(kcmStartTimeout, c.kcm, func() bool {
		if client == nil {
			pem, err := os.ReadFile(certFile)
			if err != nil {
				return false // not written yet
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return false // half written
			}
			client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		}
		return getOK(client, url)
	}); err != nil {
		return fmt.Errorf("kube-controller-manager (pid %d) not healthy at %s: %w; log:\n%s", c.kcm.pid(), url, err, c.kcm.tail(logTailLines))
	}
	return nil
}

// kcmArgs are kube-controller-manager's flags for secure port port.
func (c *Cluster) kcmArgs(port int) []string {
	args := []string{
		"--kubeconfig=" + c.kcmKube,
		// Delegated authentication and authorization of its own /metrics
		// and debug endpoints go to kube-apiserver with its identity.
		"--authentication-kubeconfig=" + c.kcmKube,
		"--authorization-kubeconfig=" + c.kcmKube,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + filepath.Join(c.Dir, "kcm-certs"),
		// Each controller acts as its own service account (as with
		// kubeadm), so RBAC denials show the controller's name.
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + c.ServiceAccountKeyFile,
		"--root-ca-file=" + c.CAFile,
		"--cluster-signing-cert-file=" + c.CAFile,
		"--cluster-signing-key-file=" + c.CAKeyFile,
		"--leader-elect=true",
		"--node-monitor-grace-period=" + c.opts.NodeMonitorGracePeriod.String(),
		// Every controller enabled by default, which includes
		// nodelifecycle, garbagecollector, namespace and
		// serviceaccount-token; cloud and IPAM controllers stay off
		// because no cloud provider and no --allocate-node-cidrs are set.
		"--controllers=*",
		"--cluster-name=kubecluster",
		"--profiling=false",
	}
	return append(args, c.opts.ControllerManagerFlags...)
}

// StopControllerManager stops kube-controller-manager (SIGTERM to its pid,
// SIGKILL after a bounded grace). Its leader-election lease is left to
// expire or be released as kube-controller-manager itself decides.
func (c *Cluster) StopControllerManager(t testing.TB) {
	t.Helper()
	if err := c.kcm.stop(otherStopGrace); err != nil {
		if !errors.Is(err, errKilled) {
			t.Fatalf("kubecluster: stopping kube-controller-manager: %v", err)
		}
		t.Logf("kubecluster: %v", err)
	}
}

// WaitControllerManagerLeader waits up to within until the Lease
// kube-system/kube-controller-manager names a holder, and returns it.
func (c *Cluster) WaitControllerManagerLeader(t testing.TB, within time.Duration) string {
	t.Helper()
	cs := c.AdminClientset(t)
	var last error
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "kube-controller-manager", metav1.GetOptions{})
		cancel()
		if err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
			return *l.Spec.HolderIdentity
		}
		last = err
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("kubecluster: no kube-controller-manager leader within %v (last error: %v); kube-controller-manager log:\n%s", within, last, c.kcm.tail(logTailLines))
	return ""
}

// Stop stops kube-controller-manager, kube-apiserver and etcd, in that
// order, each by its pid with a bounded grace. Start registers it with
// t.Cleanup; calling it earlier is allowed, and later calls do nothing.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		for _, s := range []struct {
			p     *process
			grace time.Duration
		}{{c.kcm, otherStopGrace}, {c.apiserver, apiserverStopGrace}, {c.etcd, otherStopGrace}} {
			if s.p == nil {
				continue
			}
			if err := s.p.stop(s.grace); err != nil {
				if errors.Is(err, errKilled) {
					c.t.Logf("kubecluster: %v", err)
				} else {
					c.t.Errorf("kubecluster: %v", err)
				}
			}
		}
	})
}

// logTails logs the end of every process's log.
func (c *Cluster) logTails(t testing.TB) {
	for _, p := range []*process{c.etcd, c.apiserver, c.kcm} {
		if p == nil || p.pid() == 0 {
			continue
		}
		t.Logf("kubecluster: last %d lines of %s (%s):\n%s", logTailLines, p.name, p.logPath, p.tail(logTailLines))
	}
}

// adminHTTPClient is a plain HTTPS client with the admin certificate,
// trusting the cluster CA.
func (c *Cluster) adminHTTPClient() (*http.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.AdminKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load admin kubeconfig: %w", err)
	}
	cert, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil {
		return nil, fmt.Errorf("admin certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(c.ca.cert)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}},
	}}, nil
}

// errExited is waitUntil's report that the process exited first.
var errExited = errors.New("process exited")

// waitUntil polls ok every 200 ms until it is true, p exits (errExited) or
// within passes.
func waitUntil(within time.Duration, p *process, ok func() bool) error {
	deadline := time.Now().Add(within)
	for {
		if !p.running() {
			return errExited
		}
		if ok() {
			// A process that failed to bind can exit just after another
			// process answered on its port: look once more.
			if !p.running() {
				return errExited
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", within)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// getOK reports whether GET url answers 200.
func getOK(client *http.Client, url string) bool {
	resp, err := client.Get(url)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// portOverride, set only by this package's tests, forces the port of a
// component's start attempt (a nonzero result) to exercise the retries.
var portOverride func(component string, attempt int) int

// pickPort is the port for a component's start attempt: a free one.
func pickPort(t testing.TB, component string, attempt int) int {
	t.Helper()
	if portOverride != nil {
		if p := portOverride(component, attempt); p != 0 {
			return p
		}
	}
	// Another process may take it before ours binds it; the start
	// functions retry on a new port then.
	return testdeps.FreePort(t)
}
