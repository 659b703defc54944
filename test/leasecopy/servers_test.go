package leasecopy

import (
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// server is a running `leasehold serve` with a client of its admin.
type server struct {
	*testdeps.Server
	Client kubernetes.Interface
}

// startServe starts `leasehold serve` on a free port with a fresh data
// directory (plus extra flags) and waits for its serving line; the test's
// end stops it with SIGTERM and fails unless it exits 0.
func startServe(t *testing.T, extra ...string) *server {
	t.Helper()
	return startServeIn(t, filepath.Join(t.TempDir(), "data"), extra...)
}

// startServeIn is startServe on a given data directory: a server started
// again on its directory (and port, given with --secure-port in extra)
// keeps its CA, so kubeconfigs from before still work.
func startServeIn(t *testing.T, dataDir string, extra ...string) *server {
	t.Helper()
	s, err := testdeps.LaunchServer(t, binary, testdeps.ServeOptions{DataDir: dataDir}, extra...)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &server{Server: s, Client: c}
}

// startEtcd starts a one-member Debian etcd on free ports and returns its
// client URL once it answers as itself.
func startEtcd(t *testing.T) string {
	t.Helper()
	return testdeps.StartEtcdCluster(t, 1).Members[0].Endpoint
}

// serverURL is the API address in s's admin kubeconfig.
func serverURL(t *testing.T, s *server) string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Host
}

// runLeasehold runs the binary with args to its end (at most a minute).
func runLeasehold(t *testing.T, args ...string) (string, int) {
	t.Helper()
	p := startProc(t, "leasehold "+args[0], append([]string{binary}, args...)...)
	code := p.Wait(time.Minute)
	return p.Output(), code
}

// runCopy runs `leasehold leases copy ARGS` to its end (at most a minute)
// and returns its output and exit code.
func runCopy(t *testing.T, args ...string) (string, int) {
	t.Helper()
	p := startProc(t, "leases copy", append([]string{binary, "leases", "copy"}, args...)...)
	code := p.Wait(time.Minute)
	return p.Output(), code
}

// startProc runs argv with its output collected; the test's end stops it
// by its PID and prints its output if the test failed.
func startProc(t *testing.T, name string, argv ...string) *testdeps.Process {
	t.Helper()
	return testdeps.StartProcess(t, name, testdeps.ProcessOptions{}, argv...)
}
