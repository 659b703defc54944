package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/internal/testdeps"
	"github.com/leasehold/leasehold/internal/testdeps/kubecluster"
)

const nodeLeaseNS = corev1.NamespaceNodeLease

// TestLeaseholdBehindACluster is the seeds' scenarios on a real cluster
// whose coordination.k8s.io/v1 Leasehold serves. The steps share one
// cluster and run in order.
func TestLeaseholdBehindACluster(t *testing.T) {
	b := startBehind(t)
	ctx := context.Background()
	agents := map[string]*proc{"node-a": b.agent("node-a"), "node-b": b.agent("node-b")}

	t.Run("node leases live in Leasehold, Nodes in the cluster", func(t *testing.T) {
		for name := range agents {
			testdeps.Eventually(t, 60*time.Second, 200*time.Millisecond, "node "+name+" Ready in the cluster", func() error { return nodeReady(ctx, b.viaCluster, name, corev1.ConditionTrue) })
			testdeps.Eventually(t, 30*time.Second, 200*time.Millisecond, "lease "+name+" in Leasehold", func() error {
				l, err := b.direct.CoordinationV1().Leases(nodeLeaseNS).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				n, err := b.viaCluster.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != n.UID {
					return fmt.Errorf("lease owners %+v, want Node %s", l.OwnerReferences, n.UID)
				}
				return nil
			})
		}
		if _, err := b.direct.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("Leasehold serves Nodes behind a cluster (err %v); they are the cluster's", err)
		}
		if raw := etcdGet(t, b.kc, "/registry/leases/"+nodeLeaseNS+"/node-a"); raw != "" {
			t.Errorf("node-a's lease is in the cluster's etcd too")
		}
	})

	t.Run("kube-controller-manager elects through Leasehold", func(t *testing.T) {
		holder := b.kc.WaitControllerManagerLeader(t, 90*time.Second)
		l, err := b.direct.CoordinationV1().Leases("kube-system").Get(ctx, "kube-controller-manager", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("kube-controller-manager's lease is not in Leasehold: %v", err)
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != holder {
			t.Errorf("Leasehold's lease holder %v, kube-apiserver's %q", l.Spec.HolderIdentity, holder)
		}
	})

	t.Run("Leasehold publishes no identity and answers health anonymously", func(t *testing.T) {
		// Its own identity lease, named as kube-apiserver names one from the
		// host name, would be the same object as the kube-apiserver's on
		// the same host: behind a cluster Leasehold runs no controllers.
		// (kube-apiserver re-creates its own in Leasehold at its next
		// renewal after the route, within 10 s.)
		testdeps.Eventually(t, 30*time.Second, 200*time.Millisecond, "kube-apiserver's identity lease, alone", func() error {
			l, err := b.direct.CoordinationV1().Leases("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "apiserver.kubernetes.io/identity"})
			if err != nil {
				return err
			}
			if len(l.Items) != 1 || !strings.HasPrefix(*l.Items[0].Spec.HolderIdentity, l.Items[0].Name+"_") {
				return fmt.Errorf("identity leases %+v", l.Items)
			}
			return nil
		})
		for _, name := range []string{"leasehold-controller-manager", "leader-election-controller"} {
			if _, err := b.direct.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("lease kube-system/%s exists (err %v): Leasehold elects its own controllers behind a cluster", name, err)
			}
		}
		anon := b.kc.RESTConfig(t, b.leaseholdKubeconfigFor(t, b.kc.UserKubeconfig(t, "nobody")))
		anon.CertData, anon.KeyData, anon.CertFile, anon.KeyFile = nil, nil, "", ""
		c, err := kubernetes.NewForConfig(anon)
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/readyz", "/livez", "/healthz"} {
			if out, err := c.Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx); err != nil || string(out) != "ok" {
				t.Errorf("anonymous %s straight to Leasehold: %q, %v (a kubelet's probe)", path, out, err)
			}
		}
	})

	t.Run("kubectl through kube-apiserver", func(t *testing.T) { kubectlThroughCluster(t, b) })

	t.Run("wire details of the cluster's clients", func(t *testing.T) { wireDetails(t, b) })

	t.Run("a node touches only its own lease", func(t *testing.T) { nodeConfinement(t, b) })

	t.Run("a paused node goes Unknown and comes back", func(t *testing.T) {
		agents["node-b"].Signal(syscall.SIGSTOP)
		testdeps.Eventually(t, 90*time.Second, 200*time.Millisecond, "node-b Unknown", func() error { return nodeReady(ctx, b.viaCluster, "node-b", corev1.ConditionUnknown) })
		testdeps.Eventually(t, 30*time.Second, 200*time.Millisecond, "node-b tainted unreachable", func() error {
			n, err := b.viaCluster.CoreV1().Nodes().Get(ctx, "node-b", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !slices.ContainsFunc(n.Spec.Taints, func(tt corev1.Taint) bool { return tt.Key == corev1.TaintNodeUnreachable }) {
				return fmt.Errorf("taints %+v", n.Spec.Taints)
			}
			return nil
		})
		agents["node-b"].Signal(syscall.SIGCONT)
		testdeps.Eventually(t, 60*time.Second, 200*time.Millisecond, "node-b Ready again", func() error { return nodeReady(ctx, b.viaCluster, "node-b", corev1.ConditionTrue) })
	})

	t.Run("deleting a node deletes its lease and a restarted agent registers again", func(t *testing.T) {
		old, err := b.viaCluster.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.kc.Kubectl(t, "", "delete", "node", "node-a"); err != nil {
			t.Fatal(err)
		}
		testdeps.Eventually(t, 60*time.Second, 200*time.Millisecond, "the cluster's garbage collector deletes node-a's lease in Leasehold", func() error {
			_, err := b.direct.CoordinationV1().Leases(nodeLeaseNS).Get(ctx, "node-a", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("lease still there (err %v)", err)
		})
		testdeps.Eventually(t, 30*time.Second, 200*time.Millisecond, "the agent sees its Node gone", func() error {
			if !strings.Contains(agents["node-a"].Output(), "restart the agent to register it again") {
				return fmt.Errorf("agent log:\n%s", agents["node-a"].Tail(5))
			}
			return nil
		})
		agents["node-a"].Restart()
		testdeps.Eventually(t, 60*time.Second, 200*time.Millisecond, "node-a registered again with a new lease", func() error {
			n, err := b.viaCluster.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if n.UID == old.UID {
				return fmt.Errorf("still the old Node")
			}
			l, err := b.direct.CoordinationV1().Leases(nodeLeaseNS).Get(ctx, "node-a", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != n.UID {
				return fmt.Errorf("lease owners %+v, want new Node %s", l.OwnerReferences, n.UID)
			}
			return nil
		})
	})

	t.Run("a namespace the cluster deletes takes its leases", func(t *testing.T) {
		if _, err := b.viaCluster.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		testdeps.Eventually(t, 10*time.Second, 200*time.Millisecond, "a lease in a new namespace", func() error {
			_, err := b.viaCluster.CoordinationV1().Leases("doomed").Create(ctx, lease("x", "me"), metav1.CreateOptions{})
			return err
		})
		if err := b.viaCluster.CoreV1().Namespaces().Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		testdeps.Eventually(t, 90*time.Second, 200*time.Millisecond, "the cluster's namespace controller empties and removes doomed", func() error {
			if _, err := b.viaCluster.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("namespace still there (err %v)", err)
			}
			l, err := b.direct.CoordinationV1().Leases("doomed").List(ctx, metav1.ListOptions{})
			if err != nil || len(l.Items) != 0 {
				return fmt.Errorf("leases left %v (err %v)", l, err)
			}
			return nil
		})
		_, err := b.viaCluster.CoordinationV1().Leases("missing").Create(ctx, lease("x", "me"), metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `namespaces "missing" not found`) {
			t.Errorf("a lease in a namespace the cluster lacks: %v, want NotFound for the namespace", err)
		}
	})

	t.Run("kill -9 of Leasehold: 503 through kube-apiserver, then nothing acknowledged lost", func(t *testing.T) {
		acked, err := b.viaCluster.CoordinationV1().Leases("default").Create(ctx, lease("acked", "before-crash"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b.serve.Kill()
		testdeps.Eventually(t, 30*time.Second, 200*time.Millisecond, "leases answer 503 through kube-apiserver", func() error {
			_, err := b.viaCluster.CoordinationV1().Leases("default").Get(ctx, "acked", metav1.GetOptions{})
			if apierrors.IsServiceUnavailable(err) {
				return nil
			}
			return fmt.Errorf("got %v", err)
		})
		b.serve.Restart()
		b.waitServing()
		testdeps.Eventually(t, 60*time.Second, 200*time.Millisecond, "leases served again", func() error {
			got, err := b.viaCluster.CoordinationV1().Leases("default").Get(ctx, "acked", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got.UID != acked.UID || *got.Spec.HolderIdentity != "before-crash" {
				return fmt.Errorf("got %+v, want the acknowledged lease", got)
			}
			return nil
		})
		for name := range agents {
			testdeps.Eventually(t, 60*time.Second, 200*time.Millisecond, "node "+name+" still Ready", func() error { return nodeReady(ctx, b.viaCluster, name, corev1.ConditionTrue) })
		}
	})

	t.Run("a kube-apiserver restart keeps the route", func(t *testing.T) {
		b.kc.RestartAPIServer(t)
		testdeps.Eventually(t, 60*time.Second, 200*time.Millisecond, "leases still from Leasehold", func() error {
			got, err := b.viaCluster.CoordinationV1().Leases("default").Get(ctx, "acked", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if *got.Spec.HolderIdentity != "before-crash" {
				return fmt.Errorf("holder %q", *got.Spec.HolderIdentity)
			}
			return nil
		})
		if raw := etcdGet(t, b.kc, "/registry/leases/default/acked"); raw != "" {
			t.Errorf("a lease written through the route is in etcd")
		}
	})

	t.Run("Leasehold's audit log names the real users", func(t *testing.T) { auditNamesRealUsers(t, b) })
}

func lease(name, holder string) *coordinationv1.Lease {
	d := int32(30)
	now := metav1.NewMicroTime(time.Now())
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &d, RenewTime: &now},
	}
}

// nodeReady checks the Node's Ready condition.
func nodeReady(ctx context.Context, c kubernetes.Interface, name string, want corev1.ConditionStatus) error {
	n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			if cond.Status == want {
				return nil
			}
			return fmt.Errorf("Ready=%s (%s), want %s", cond.Status, cond.Reason, want)
		}
	}
	return fmt.Errorf("no Ready condition")
}

// auditNamesRealUsers reads Leasehold's audit log: the identities
// kube-apiserver passed on, and the client addresses it saw.
func auditNamesRealUsers(t *testing.T, b *behind) {
	f, err := os.Open(b.audit)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var events []auditv1.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		events = append(events, ev)
	}
	find := func(what string, match func(*auditv1.Event) bool) *auditv1.Event {
		t.Helper()
		for i := range events {
			if match(&events[i]) {
				return &events[i]
			}
		}
		t.Errorf("no audit event for %s among %d", what, len(events))
		return nil
	}
	gc := find("the garbage collector's delete of node-a's lease", func(e *auditv1.Event) bool {
		return e.Verb == "delete" && e.ObjectRef != nil && e.ObjectRef.Resource == "leases" && e.ObjectRef.Name == "node-a" && e.Stage == auditv1.StageResponseComplete
	})
	if gc != nil {
		if gc.User.Username != "system:serviceaccount:kube-system:generic-garbage-collector" {
			t.Errorf("node-a's lease deleted by %+v, want the cluster's garbage collector", gc.User)
		}
		if len(gc.SourceIPs) == 0 || gc.SourceIPs[0] != "127.0.0.1" {
			t.Errorf("garbage collector's delete from %v, want the client's address kube-apiserver forwarded", gc.SourceIPs)
		}
	}
	admin := find("the cluster admin's create of default/acked", func(e *auditv1.Event) bool {
		return e.Verb == "create" && e.ObjectRef != nil && e.ObjectRef.Name == "acked" && e.Stage == auditv1.StageResponseComplete
	})
	if admin != nil && (admin.User.Username != kubecluster.AdminUser || !slices.Contains(admin.User.Groups, "system:masters")) {
		t.Errorf("create of acked by %+v, want %s in system:masters", admin.User, kubecluster.AdminUser)
	}
	kcm := find("kube-controller-manager's election", func(e *auditv1.Event) bool {
		return (e.Verb == "create" || e.Verb == "update") && e.ObjectRef != nil && e.ObjectRef.Name == "kube-controller-manager" && e.ObjectRef.Namespace == "kube-system"
	})
	if kcm != nil && kcm.User.Username != "system:kube-controller-manager" {
		t.Errorf("kube-controller-manager's lease written by %+v", kcm.User)
	}
	denied := find("node-a's refused read of node-b's lease", func(e *auditv1.Event) bool {
		return e.Verb == "get" && e.ObjectRef != nil && e.ObjectRef.Name == "node-b" && e.ResponseStatus != nil && e.ResponseStatus.Code == 403 && e.User.Username == "system:node:node-a"
	})
	if denied != nil && denied.Annotations["authorization.k8s.io/decision"] != "forbid" {
		t.Errorf("refused request's annotations %v", denied.Annotations)
	}
}

// uidPrecondition deletes name only if its uid is uid, as the garbage
// collector does.
func uidPrecondition(uid types.UID) metav1.DeleteOptions {
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
}
