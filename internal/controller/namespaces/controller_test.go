package namespaces

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/request"
)

// fakeContent is a cluster's namespaced objects: per "resource/namespace",
// the finalizers of each object. Objects with finalizers survive a delete.
type fakeContent struct {
	mu      sync.Mutex
	objects map[string][][]string
	fail    map[string]error
	deletes []string
}

func (f *fakeContent) deleteCollection(_ context.Context, res *registry.Resource, ns string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := res.Resource + "/" + ns
	f.deletes = append(f.deletes, res.GroupVersion.String()+"/"+k)
	if err := f.fail[k]; err != nil {
		return err
	}
	var kept [][]string
	for _, fin := range f.objects[k] {
		if len(fin) > 0 {
			kept = append(kept, fin)
		}
	}
	f.objects[k] = kept
	return nil
}

func (f *fakeContent) list(_ context.Context, res *registry.Resource, ns string) ([]metav1.PartialObjectMetadata, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []metav1.PartialObjectMetadata
	for _, fin := range f.objects[res.Resource+"/"+ns] {
		out = append(out, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Finalizers: fin}})
	}
	return out, nil
}

func (f *fakeContent) dropFinalizers() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, objs := range f.objects {
		for i := range objs {
			objs[i] = nil
		}
		f.objects[k] = objs
	}
}

var t0 = metav1.NewTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))

// testResources: leases in two versions over one storage prefix, events,
// a cluster-scoped kind and a namespaced review, which are not content.
func testResources() *registry.Set {
	return registry.NewSet(
		&registry.Resource{GroupVersion: coordinationv1.SchemeGroupVersion, Resource: "leases", Namespaced: true},
		&registry.Resource{GroupVersion: coordinationv1beta1.SchemeGroupVersion, Resource: "leases", Namespaced: true},
		&registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Resource: "events", Namespaced: true},
		&registry.Resource{GroupVersion: corev1.SchemeGroupVersion, Resource: "nodes"},
		&registry.Resource{GroupVersion: metav1.SchemeGroupVersion, Resource: "localsubjectaccessreviews", Namespaced: true,
			Review: func(context.Context, *request.Record, runtime.Object) (runtime.Object, error) { return nil, nil }},
	)
}

func terminatingNamespace(name string, finalizers ...corev1.FinalizerName) *corev1.Namespace {
	return &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid-" + types.UID(name), DeletionTimestamp: &t0},
		Spec:       corev1.NamespaceSpec{Finalizers: finalizers},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
	}
}

func newTestController(objs ...runtime.Object) (*Controller, *fake.Clientset, *fakeContent) {
	client := fake.NewClientset(objs...)
	c := New(client, testResources(), slog.New(slog.DiscardHandler), func() time.Time { return t0.Time })
	f := &fakeContent{objects: map[string][][]string{}, fail: map[string]error{}}
	c.content = f
	return c, client, f
}

func condition(ns *corev1.Namespace, t corev1.NamespaceConditionType) corev1.NamespaceCondition {
	if i := indexOf(ns.Status.Conditions, t); i >= 0 {
		return ns.Status.Conditions[i]
	}
	return corev1.NamespaceCondition{}
}

func finalizeActions(client *fake.Clientset) []*corev1.Namespace {
	var out []*corev1.Namespace
	for _, a := range client.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && a.GetSubresource() == "finalize" {
			out = append(out, u.GetObject().(*corev1.Namespace))
		}
	}
	return out
}

func TestContentIsDeletedOncePerStoragePrefix(t *testing.T) {
	c, _, f := newTestController(terminatingNamespace("x", corev1.FinalizerKubernetes))
	if err := c.sync(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	want := []string{"coordination.k8s.io/v1/leases/x", "v1/events/x"}
	if len(f.deletes) != len(want) || f.deletes[0] != want[0] || f.deletes[1] != want[1] {
		t.Fatalf("deleted %v, want %v", f.deletes, want)
	}
}

func TestRemainingContentHoldsTheFinalizerAndIsReported(t *testing.T) {
	ctx := context.Background()
	c, client, f := newTestController(terminatingNamespace("x", corev1.FinalizerKubernetes))
	f.objects["leases/x"] = [][]string{nil, {"example.com/hold"}, nil}
	f.objects["events/x"] = [][]string{nil}

	var remaining *contentRemainingError
	if err := c.sync(ctx, "x"); !errors.As(err, &remaining) {
		t.Fatalf("sync with a held lease: %v, want content remaining", err)
	}
	if got := finalizeActions(client); len(got) != 0 {
		t.Fatalf("finalized with content left: %v", got)
	}
	ns, err := client.CoreV1().Namespaces().Get(ctx, "x", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for typ, want := range map[corev1.NamespaceConditionType]corev1.NamespaceCondition{
		corev1.NamespaceContentRemaining:         {Status: corev1.ConditionTrue, Reason: "SomeResourcesRemain", Message: "Some resources are remaining: leases.coordination.k8s.io has 1 resource instances"},
		corev1.NamespaceFinalizersRemaining:      {Status: corev1.ConditionTrue, Reason: "SomeFinalizerRemain", Message: "Some finalizers are remaining: example.com/hold in 1 resource instances"},
		corev1.NamespaceDeletionContentFailure:   {Status: corev1.ConditionFalse, Reason: "ContentDeleted", Message: "All content successfully deleted, may be waiting on finalization"},
		corev1.NamespaceDeletionDiscoveryFailure: {Status: corev1.ConditionFalse, Reason: "ResourcesDiscovered", Message: "All resources successfully discovered"},
	} {
		got := condition(ns, typ)
		if got.Status != want.Status || got.Reason != want.Reason || got.Message != want.Message {
			t.Errorf("%s = %s/%s/%q, want %s/%s/%q", typ, got.Status, got.Reason, got.Message, want.Status, want.Reason, want.Message)
		}
	}

	// The holder lets go: the namespace is finalized, its conditions say so.
	f.dropFinalizers()
	if err := c.sync(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	fin := finalizeActions(client)
	if len(fin) != 1 || len(fin[0].Spec.Finalizers) != 0 {
		t.Fatalf("finalize calls %v, want one leaving no finalizer", fin)
	}
	ns, err = client.CoreV1().Namespaces().Get(ctx, "x", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := condition(ns, corev1.NamespaceContentRemaining); got.Status != corev1.ConditionFalse || got.Reason != "ContentRemoved" || got.Message != "All content successfully removed" {
		t.Errorf("ContentRemaining after the content went: %+v", got)
	}
}

func TestDeletionFailureIsAConditionAndNoFinalize(t *testing.T) {
	ctx := context.Background()
	c, client, f := newTestController(terminatingNamespace("x", corev1.FinalizerKubernetes))
	f.fail["events/x"] = errors.New("deleting events in namespace x: boom")
	if err := c.sync(ctx, "x"); err == nil {
		t.Fatal("sync succeeded with a failed deletion")
	}
	ns, _ := client.CoreV1().Namespaces().Get(ctx, "x", metav1.GetOptions{})
	got := condition(ns, corev1.NamespaceDeletionContentFailure)
	if got.Status != corev1.ConditionTrue || got.Reason != "ContentDeletionFailed" || got.Message != "Failed to delete all resource types, 1 remaining: deleting events in namespace x: boom" {
		t.Errorf("content failure condition %+v", got)
	}
	if len(finalizeActions(client)) != 0 {
		t.Fatal("finalized after a failed deletion")
	}
}

func TestOnlyTerminatingNamespacesWithOurFinalizerAreEmptied(t *testing.T) {
	active := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "active"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}}}
	others := terminatingNamespace("others", "example.com/mine")
	c, client, f := newTestController(active, others, terminatingNamespace("legacy"))
	ctx := context.Background()
	for _, n := range []string{"active", "others", "missing"} {
		if err := c.sync(ctx, n); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
	if len(f.deletes) != 0 {
		t.Fatalf("content deleted for namespaces not ours to empty: %v", f.deletes)
	}
	// A namespace without any finalizer (created before they were set) is
	// emptied, then deleted.
	if err := c.sync(ctx, "legacy"); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Namespaces().Get(ctx, "legacy", metav1.GetOptions{}); err == nil {
		t.Fatal("legacy namespace still there")
	}
}

// Run finds terminating namespaces through its informer, and stops all it
// started when its context ends (goleak checks).
func TestRunFinalizesTerminatingNamespaces(t *testing.T) {
	c, client, _ := newTestController(terminatingNamespace("x", corev1.FinalizerKubernetes))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(finalizeActions(client)) == 0 {
		if time.Now().After(deadline) {
			cancel()
			t.Fatal("namespace x not finalized")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A namespace marked for deletion later is seen through the watch.
	if _, err := client.CoreV1().Namespaces().Create(context.Background(), terminatingNamespace("y", corev1.FinalizerKubernetes), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for len(finalizeActions(client)) < 2 {
		if time.Now().After(deadline) {
			cancel()
			t.Fatal("namespace y not finalized")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
