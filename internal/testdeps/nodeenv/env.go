package nodeenv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/connrotation"
)

// RequestTimeout bounds each request of the checking client.
const RequestTimeout = 10 * time.Second

// Env is a checking client on the server under test.
type Env struct {
	t testing.TB
	// Config is the kubeconfig's client configuration as loaded, for an
	// agent to copy: it shares nothing with Client.
	Config *rest.Config
	// Client is the checking client: no rate limit, a deadline per
	// request, its connections closed when the test ends.
	Client kubernetes.Interface
}

// New loads kubeconfig and returns an Env whose checking client sends
// userAgent.
func New(t testing.TB, kubeconfig, userAgent string) *Env {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("load kubeconfig %s: %v", kubeconfig, err)
	}
	cfg.UserAgent = userAgent
	check := rest.CopyConfig(cfg)
	check.QPS, check.Burst = -1, 0
	check.Timeout = RequestTimeout
	// The checking client dials through its own tracker so that every
	// connection it opened, idle or not, is closed when the test ends.
	conns := connrotation.NewDialer((&net.Dialer{Timeout: RequestTimeout}).DialContext)
	t.Cleanup(conns.CloseAll)
	check.Dial = conns.DialContext
	client, err := kubernetes.NewForConfig(check)
	if err != nil {
		t.Fatalf("checking client: %v", err)
	}
	return &Env{t: t, Config: cfg, Client: client}
}

// Names returns n node names unique to one test, shaped like a cloud's
// (dotted DNS names, as the first seed's), so names never collide between
// tests or runs on a shared server.
func Names(prefix string, n int) []string {
	run := rand.Uint32()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("ip-10-29-%d-%d.%s-%08x.e2e.internal", run%250, i, prefix, run)
	}
	return names
}

// request is a context for one request of the checking client.
func request() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), RequestTimeout)
}

// Node gets the Node name.
func (e *Env) Node(name string) (*corev1.Node, error) {
	ctx, cancel := request()
	defer cancel()
	return e.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
}

// Lease gets the node lease name, in kube-node-lease.
func (e *Env) Lease(name string) (*coordinationv1.Lease, error) {
	ctx, cancel := request()
	defer cancel()
	return e.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
}

// DeleteAtEnd deletes the Node name and its Lease when the test ends, so a
// shared server is left as the test found it.
func (e *Env) DeleteAtEnd(name string) {
	e.t.Cleanup(func() {
		ctx, cancel := request()
		defer cancel()
		if err := e.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			e.t.Errorf("cleanup: delete node %s: %v", name, err)
		}
		if err := e.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			e.t.Errorf("cleanup: delete lease %s: %v", name, err)
		}
	})
}
