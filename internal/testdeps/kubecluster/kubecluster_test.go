package kubecluster_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/testdeps/kubecluster"
)

// TestClusterServesEveryKubectl starts kube-apiserver on etcd and drives it
// with every kubectl version on the machine: /readyz and a namespace list
// (kube-apiserver creates kube-system, kube-public, kube-node-lease and
// default by itself).
func TestClusterServesEveryKubectl(t *testing.T) {
	start := time.Now()
	c := kubecluster.Start(t, kubecluster.Options{})
	t.Logf("cluster ready in %v (kube-apiserver pid %d at %s)", time.Since(start).Round(time.Millisecond), c.APIServerPID(), c.URL)
	versions := append([]string{""}, kubecluster.KubectlVersions(t)...)
	for _, v := range versions {
		name := "kubectl"
		if v != "" {
			name += "-" + v
		}
		t.Run(name, func(t *testing.T) {
			out, err := c.Kubectl(t, v, "get", "--raw", "/readyz")
			if err != nil || strings.TrimSpace(out) != "ok" {
				t.Fatalf("get --raw /readyz = %q, %v; want ok", out, err)
			}
			out, err = c.Kubectl(t, v, "get", "namespaces", "-o", "name")
			if err != nil {
				t.Fatal(err)
			}
			for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
				if !strings.Contains(out, "namespace/"+ns+"\n") {
					t.Errorf("get namespaces: no %s in:\n%s", ns, out)
				}
			}
		})
	}
}

// TestControllerManagerLeadsWithItsLeaseInEtcd starts
// kube-controller-manager and waits until it holds the leader-election
// Lease kube-system/kube-controller-manager, which kube-apiserver stores in
// etcd today (the APIService is Local): the key is read from etcd directly.
// A second kube-controller-manager, started after the first is stopped,
// takes the lease over.
func TestControllerManagerLeadsWithItsLeaseInEtcd(t *testing.T) {
	c := kubecluster.Start(t, kubecluster.Options{ControllerManager: true})
	first := c.WaitControllerManagerLeader(t, 2*time.Minute)
	t.Logf("kube-controller-manager (pid %d) leads as %s", c.ControllerManagerPID(), first)

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.EtcdURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cli.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "/registry/leases/kube-system/kube-controller-manager")
	if err != nil {
		t.Fatalf("etcd get: %v", err)
	}
	if len(resp.Kvs) != 1 || !bytes.Contains(resp.Kvs[0].Value, []byte(first)) {
		t.Fatalf("etcd holds %d values for the lease key, want one naming holder %s", len(resp.Kvs), first)
	}

	firstPID := c.ControllerManagerPID()
	c.StopControllerManager(t)
	c.StartControllerManager(t)
	if c.ControllerManagerPID() == firstPID {
		t.Fatalf("StartControllerManager kept pid %d", firstPID)
	}
	// The identity is hostname_<random uuid>, new per process; the new
	// process waits out the old lease (15 s) unless it was released.
	deadline := time.Now().Add(time.Minute)
	for {
		if h := c.WaitControllerManagerLeader(t, time.Minute); h != first {
			t.Logf("second kube-controller-manager (pid %d) leads as %s", c.ControllerManagerPID(), h)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lease still names the stopped kube-controller-manager %s after a minute", first)
		}
		time.Sleep(time.Second)
	}
}

// TestNodeCredentialsAreConfined checks that a kubelet identity issued by
// NodeKubeconfig is what kube-apiserver's Node authorizer and
// NodeRestriction admission confine: it may create and renew its own Lease
// in kube-node-lease, and gets 403 for another node's lease (create: from
// NodeRestriction; get and update: from the Node authorizer), for a lease
// elsewhere and for a list.
func TestNodeCredentialsAreConfined(t *testing.T) {
	c := kubecluster.Start(t, kubecluster.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	node := c.Clientset(t, c.NodeKubeconfig(t, "node-a")).CoordinationV1()
	admin := c.AdminClientset(t).CoordinationV1()

	own, err := node.Leases("kube-node-lease").Create(ctx, nodeLease("node-a", "kube-node-lease"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("node-a creating its own lease: %v", err)
	}
	renewed := metav1.NewMicroTime(time.Now())
	own.Spec.RenewTime = &renewed
	if _, err := node.Leases("kube-node-lease").Update(ctx, own, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("node-a renewing its own lease: %v", err)
	}

	_, err = node.Leases("kube-node-lease").Create(ctx, nodeLease("node-b", "kube-node-lease"), metav1.CreateOptions{})
	wantForbidden(t, "node-a creating node-b's lease", err, "can only access node lease with the same name as the requesting node")

	other, err := admin.Leases("kube-node-lease").Create(ctx, nodeLease("node-b", "kube-node-lease"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("admin creating node-b's lease: %v", err)
	}
	_, err = node.Leases("kube-node-lease").Get(ctx, "node-b", metav1.GetOptions{})
	wantForbidden(t, "node-a reading node-b's lease", err, "")
	other.Spec.HolderIdentity = ptr("node-a")
	_, err = node.Leases("kube-node-lease").Update(ctx, other, metav1.UpdateOptions{})
	wantForbidden(t, "node-a updating node-b's lease", err, "")

	_, err = node.Leases("default").Create(ctx, nodeLease("node-a", "default"), metav1.CreateOptions{})
	wantForbidden(t, "node-a creating a lease in default", err, "")
	_, err = node.Leases("kube-node-lease").List(ctx, metav1.ListOptions{})
	wantForbidden(t, "node-a listing leases", err, "")
}

func nodeLease(name, namespace string) *coordinationv1.Lease {
	now := metav1.NewMicroTime(time.Now())
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr(name), LeaseDurationSeconds: ptr(int32(40)), RenewTime: &now},
	}
}

func wantForbidden(t *testing.T, what string, err error, msg string) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s: got %v, want 403 Forbidden", what, err)
		return
	}
	if msg != "" && !strings.Contains(err.Error(), msg) {
		t.Errorf("%s: 403 %q does not say %q", what, err, msg)
	}
}

func ptr[T any](v T) *T { return &v }

// TestNodeLifecycleMarksASilentNodeUnknown plays a kubelet with a node
// kubeconfig: it registers Node node-a as Ready and renews its lease once,
// then goes silent. kube-controller-manager's node lifecycle controller
// must mark the node's Ready condition Unknown once the (short, harness
// default 20s) node-monitor-grace-period has passed, which is what the
// node-failure tests built on this harness rely on.
func TestNodeLifecycleMarksASilentNodeUnknown(t *testing.T) {
	c := kubecluster.Start(t, kubecluster.Options{ControllerManager: true})
	c.WaitControllerManagerLeader(t, 2*time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kubelet := c.Clientset(t, c.NodeKubeconfig(t, "node-a"))

	node, err := kubelet.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("node-a registering itself: %v", err)
	}
	now := metav1.Now()
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: now, LastTransitionTime: now}}
	if _, err := kubelet.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("node-a reporting Ready: %v", err)
	}
	if _, err := kubelet.CoordinationV1().Leases("kube-node-lease").Create(ctx, nodeLease("node-a", "kube-node-lease"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("node-a creating its lease: %v", err)
	}
	silent := time.Now()

	admin := c.AdminClientset(t)
	for {
		n, err := admin.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get node-a: %v", err)
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionUnknown {
				after := time.Since(silent)
				t.Logf("node-a Ready=Unknown (%s) %v after its last renewal", cond.Reason, after.Round(time.Second))
				if after < 20*time.Second {
					t.Errorf("node-a went Unknown after %v, before the 20s grace period", after)
				}
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("node-a still not Ready=Unknown %v after it went silent: %+v", time.Since(silent), n.Status.Conditions)
		case <-time.After(time.Second):
		}
	}
}

// TestDelegatingKubeconfig checks what an aggregated server's own identity
// can do with DelegatingKubeconfig: read kube-apiserver's
// extension-apiserver-authentication ConfigMap, which must carry the
// harness's request-header settings (the front-proxy CA, the one allowed
// name, the X-Remote-* headers), and create TokenReviews and
// SubjectAccessReviews.
func TestDelegatingKubeconfig(t *testing.T) {
	c := kubecluster.Start(t, kubecluster.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs := c.Clientset(t, c.DelegatingKubeconfig(t, "leasehold-server"))

	// kube-apiserver writes the ConfigMap from a controller its post-start
	// hook starts, so it may come just after /readyz.
	var cm *corev1.ConfigMap
	for {
		var err error
		cm, err = cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsNotFound(err) || ctx.Err() != nil {
			t.Fatalf("reading the authentication ConfigMap: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	frontProxyCA, err := os.ReadFile(c.FrontProxyCAFile)
	if err != nil {
		t.Fatal(err)
	}
	clientCA, err := os.ReadFile(c.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"requestheader-client-ca-file":       string(frontProxyCA),
		"client-ca-file":                     string(clientCA),
		"requestheader-allowed-names":        `["front-proxy-client"]`,
		"requestheader-username-headers":     `["X-Remote-User"]`,
		"requestheader-group-headers":        `["X-Remote-Group"]`,
		"requestheader-extra-headers-prefix": `["X-Remote-Extra-"]`,
	} {
		if got := cm.Data[key]; strings.TrimSpace(got) != strings.TrimSpace(want) {
			t.Errorf("ConfigMap %s = %q, want %q", key, got, want)
		}
	}

	sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:node:node-a",
		Groups:             []string{"system:nodes", "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Group: "coordination.k8s.io", Resource: "leases", Namespace: "kube-node-lease", Name: "node-a", Verb: "update"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SubjectAccessReview: %v", err)
	}
	if !sar.Status.Allowed {
		t.Errorf("SubjectAccessReview: node-a may not update its own lease: %+v", sar.Status)
	}
	tr, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "not-a-token"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenReview: %v", err)
	}
	if tr.Status.Authenticated {
		t.Errorf("TokenReview authenticated a made-up token: %+v", tr.Status)
	}
	// Without the bindings, the same calls are refused.
	plain := c.Clientset(t, c.UserKubeconfig(t, "someone-else"))
	_, err = plain.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
	wantForbidden(t, "an unbound user reading the authentication ConfigMap", err, "")
}
