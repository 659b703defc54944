package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/internal/controller/namespaces"
	"github.com/leasehold/leasehold/internal/served"
	"github.com/leasehold/leasehold/internal/server/servertest"
	"github.com/leasehold/leasehold/internal/testdeps"
)

const waitFor = 15 * time.Second

// startWithController runs a server and a namespace controller on its
// client (until `serve` runs one itself), both stopped when the test ends.
func startWithController(t *testing.T) (*servertest.Server, kubernetes.Interface) {
	t.Helper()
	s := servertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	c := namespaces.New(s.Client, served.Stored(time.Now), slog.New(slog.DiscardHandler), nil)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("namespace controller: %v", err)
		}
	})
	return s, s.Client
}

// rawCreate POSTs a lease in ns and returns the answer's status code and body.
func rawCreate(t *testing.T, c kubernetes.Interface, ns, name string) (int, string) {
	t.Helper()
	body, _ := json.Marshal(&coordinationv1.Lease{
		TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
	})
	var code int
	raw, _ := c.CoordinationV1().RESTClient().Post().AbsPath("/apis/coordination.k8s.io/v1/namespaces", ns, "leases").
		SetHeader("Content-Type", "application/json").Body(body).Do(context.Background()).StatusCode(&code).Raw()
	return code, strings.TrimSpace(string(raw))
}

func TestNamespaceDeletionRemovesItsContent(t *testing.T) {
	_, c := startWithController(t)
	ctx := context.Background()
	const ns = "doomed"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(created.Spec.Finalizers) != 1 || created.Spec.Finalizers[0] != corev1.FinalizerKubernetes {
		t.Fatalf("new namespace finalizers %v, want [kubernetes]", created.Spec.Finalizers)
	}
	for i := range 3 {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("l%d", i)}}
		if i == 0 {
			// Held by a finalizer, so the namespace stays Terminating until it goes.
			l.Finalizers = []string{"example.com/hold"}
		}
		if _, err := c.CoordinationV1().Leases(ns).Create(ctx, l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("e%d", i)},
			InvolvedObject: corev1.ObjectReference{Kind: "Lease", Namespace: ns, Name: "l0"}, Reason: "Test", Message: "m", Type: corev1.EventTypeNormal}
		if _, err := c.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	if err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("namespace gone at once: %v", err)
	}
	if got.Status.Phase != corev1.NamespaceTerminating || got.DeletionTimestamp == nil {
		t.Fatalf("after DELETE: phase %s deletionTimestamp %v, want Terminating and set", got.Status.Phase, got.DeletionTimestamp)
	}

	// The controller deletes what it can and reports what is held.
	testdeps.Eventually(t, waitFor, 20*time.Millisecond, "free leases and events deleted, the held one reported", func() (bool, error) {
		leases, err := c.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		events, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		n, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NamespaceContentRemaining {
				return len(leases.Items) == 1 && len(events.Items) == 0 && cond.Status == corev1.ConditionTrue &&
					cond.Message == "Some resources are remaining: leases.coordination.k8s.io has 1 resource instances", nil
			}
		}
		return false, nil
	})

	// No new content while it terminates, with Kubernetes' exact answer.
	code, body := rawCreate(t, c, ns, "late")
	want := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"leases.coordination.k8s.io \"late\" is forbidden: unable to create new content in namespace doomed because it is being terminated","reason":"Forbidden","details":{"name":"late","group":"coordination.k8s.io","kind":"leases","causes":[{"reason":"NamespaceTerminating","message":"namespace doomed is being terminated","field":"metadata.namespace"}]},"code":403}`
	if code != 403 || body != want {
		t.Errorf("create in the terminating namespace: %d %s\nwant 403 %s", code, body, want)
	}

	// The holder lets go: the lease, then the namespace, go.
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := c.CoordinationV1().Leases(ns).Patch(ctx, "l0", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testdeps.Eventually(t, waitFor, 20*time.Millisecond, "namespace gone", func() (bool, error) {
		_, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	leases, err := c.CoordinationV1().Leases(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(leases.Items) != 0 {
		t.Fatalf("leases after the namespace went: %v, %v", leases, err)
	}
	code, body = rawCreate(t, c, ns, "after")
	want = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"namespaces \"doomed\" not found","reason":"NotFound","details":{"name":"doomed","kind":"namespaces"},"code":404}`
	if code != 404 || body != want {
		t.Errorf("create in the deleted namespace: %d %s\nwant 404 %s", code, body, want)
	}
}

func TestSystemNamespacesCannotBeDeleted(t *testing.T) {
	_, c := startWithController(t)
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		var code int
		raw, _ := c.CoreV1().RESTClient().Delete().AbsPath("/api/v1/namespaces", ns).Do(context.Background()).StatusCode(&code).Raw()
		want := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"namespaces \"` + ns + `\" is forbidden: this namespace may not be deleted","reason":"Forbidden","details":{"name":"` + ns + `","kind":"namespaces"},"code":403}`
		if got := strings.TrimSpace(string(raw)); code != 403 || got != want {
			t.Errorf("deleting %s: %d %s\nwant 403 %s", ns, code, got, want)
		}
		n, err := c.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		if err != nil || n.DeletionTimestamp != nil {
			t.Errorf("%s after the refused delete: %v, %v", ns, n, err)
		}
	}
}
