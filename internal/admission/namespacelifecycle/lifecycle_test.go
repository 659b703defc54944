package namespacelifecycle

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/leasehold/leasehold/internal/admission"
	nsregistry "github.com/leasehold/leasehold/internal/registry/namespace"
	"github.com/leasehold/leasehold/internal/request"
)

// namespaces is a fake cluster: the cache's view and the store's.
type namespaces struct {
	cache, store map[string]corev1.NamespacePhase
	liveReads    int
}

func (n *namespaces) getter(m *map[string]corev1.NamespacePhase, live bool) Getter {
	return func(_ context.Context, name string) (*corev1.Namespace, error) {
		if live {
			n.liveReads++
		}
		phase, ok := (*m)[name]
		if !ok {
			return nil, nil
		}
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: phase}}, nil
	}
}

func newPlugin(n *namespaces, clk *clocktesting.FakeClock) *Plugin {
	return New(n.getter(&n.cache, false), n.getter(&n.store, true), nsregistry.System, clk)
}

func attrs(op admission.Operation, group, resource, ns, name string, obj runtime.Object) *admission.Attributes {
	return &admission.Attributes{
		Attributes: &request.Attributes{ResourceRequest: true, APIGroup: group, APIVersion: "v1", Resource: resource, Namespace: ns, Name: name},
		Operation:  op,
		Object:     obj,
	}
}

func lease(name string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// statusJSON is the Status body the client gets for err.
func statusJSON(t *testing.T, err error) string {
	t.Helper()
	se, ok := err.(apierrors.APIStatus)
	if !ok {
		t.Fatalf("%v (%T) is not an API status", err, err)
	}
	st := se.Status()
	st.Kind, st.APIVersion = "Status", "v1"
	b, jerr := json.Marshal(st)
	if jerr != nil {
		t.Fatal(jerr)
	}
	return string(b)
}

func TestSystemNamespacesMayNotBeDeleted(t *testing.T) {
	n := &namespaces{cache: map[string]corev1.NamespacePhase{}, store: map[string]corev1.NamespacePhase{}}
	p := newPlugin(n, clocktesting.NewFakeClock(time.Now()))
	for _, name := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		err := p.Admit(context.Background(), attrs(admission.Delete, "", "namespaces", "", name, nil))
		want := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"namespaces \"` + name + `\" is forbidden: this namespace may not be deleted","reason":"Forbidden","details":{"name":"` + name + `","kind":"namespaces"},"code":403}`
		if got := statusJSON(t, err); got != want {
			t.Errorf("deleting %s:\n got %s\nwant %s", name, got, want)
		}
	}
	if err := p.Admit(context.Background(), attrs(admission.Delete, "", "namespaces", "", "team-a", nil)); err != nil {
		t.Errorf("deleting an ordinary namespace: %v", err)
	}
}

func TestCreateInTerminatingNamespaceIsForbidden(t *testing.T) {
	n := &namespaces{
		cache: map[string]corev1.NamespacePhase{"gone": corev1.NamespaceTerminating, "ok": corev1.NamespaceActive},
		store: map[string]corev1.NamespacePhase{"gone": corev1.NamespaceTerminating, "ok": corev1.NamespaceActive},
	}
	p := newPlugin(n, clocktesting.NewFakeClock(time.Now()))
	ctx := context.Background()
	err := p.Admit(ctx, attrs(admission.Create, "coordination.k8s.io", "leases", "gone", "", lease("l1")))
	want := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"leases.coordination.k8s.io \"l1\" is forbidden: unable to create new content in namespace gone because it is being terminated","reason":"Forbidden","details":{"name":"l1","group":"coordination.k8s.io","kind":"leases","causes":[{"reason":"NamespaceTerminating","message":"namespace gone is being terminated","field":"metadata.namespace"}]},"code":403}`
	if got := statusJSON(t, err); got != want {
		t.Errorf("create in a terminating namespace:\n got %s\nwant %s", got, want)
	}
	// generateName stands in for the name, as kube-apiserver's.
	gen := &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: "ev-"}}
	if err := p.Admit(ctx, attrs(admission.Create, "", "events", "gone", "", gen)); !apierrors.IsForbidden(err) || err.(apierrors.APIStatus).Status().Details.Name != "ev-" {
		t.Errorf("create with generateName: %v", err)
	}
	// Updates and deletes in it go on: the controller must empty it.
	for _, op := range []admission.Operation{admission.Update, admission.Delete} {
		if err := p.Admit(ctx, attrs(op, "coordination.k8s.io", "leases", "gone", "l1", lease("l1"))); err != nil {
			t.Errorf("%s in a terminating namespace: %v", op, err)
		}
	}
	if err := p.Admit(ctx, attrs(admission.Create, "coordination.k8s.io", "leases", "ok", "", lease("l1"))); err != nil {
		t.Errorf("create in an active namespace: %v", err)
	}
	if n.liveReads != 0 {
		t.Errorf("%d live reads for namespaces the cache had", n.liveReads)
	}
}

func TestMissingNamespaceIsNotFoundAfterALiveRead(t *testing.T) {
	n := &namespaces{cache: map[string]corev1.NamespacePhase{}, store: map[string]corev1.NamespacePhase{"new": corev1.NamespaceActive}}
	p := newPlugin(n, clocktesting.NewFakeClock(time.Now()))
	ctx := context.Background()
	err := p.Admit(ctx, attrs(admission.Create, "coordination.k8s.io", "leases", "nope", "", lease("l1")))
	want := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"namespaces \"nope\" not found","reason":"NotFound","details":{"name":"nope","kind":"namespaces"},"code":404}`
	if got := statusJSON(t, err); got != want {
		t.Errorf("create in a missing namespace:\n got %s\nwant %s", got, want)
	}
	// The cache has not seen "new" yet: the live read has.
	if err := p.Admit(ctx, attrs(admission.Create, "coordination.k8s.io", "leases", "new", "", lease("l1"))); err != nil {
		t.Errorf("create in a namespace only the store has: %v", err)
	}
	// Cluster-scoped objects, namespaces and local access reviews are not looked up.
	reads := n.liveReads
	for _, a := range []*admission.Attributes{
		attrs(admission.Create, "", "nodes", "", "n1", nil),
		attrs(admission.Create, "", "namespaces", "", "nope", nil),
		attrs(admission.Create, "authorization.k8s.io", "localsubjectaccessreviews", "nope", "", nil),
	} {
		if err := p.Admit(ctx, a); err != nil {
			t.Errorf("%s: %v", a.Resource, err)
		}
	}
	if n.liveReads != reads {
		t.Errorf("looked up namespaces for requests that need none")
	}
}

// Right after a namespace's DELETE, a cache still showing it Active is not
// trusted for 30 s: the create is judged on a live read.
func TestCreateRightAfterNamespaceDeleteReadsLive(t *testing.T) {
	n := &namespaces{
		cache: map[string]corev1.NamespacePhase{"x": corev1.NamespaceActive},
		store: map[string]corev1.NamespacePhase{"x": corev1.NamespaceActive},
	}
	clk := clocktesting.NewFakeClock(time.Now())
	p := newPlugin(n, clk)
	ctx := context.Background()
	if err := p.Admit(ctx, attrs(admission.Delete, "", "namespaces", "", "x", nil)); err != nil {
		t.Fatal(err)
	}
	n.store["x"] = corev1.NamespaceTerminating // the cache lags
	if err := p.Admit(ctx, attrs(admission.Create, "coordination.k8s.io", "leases", "x", "", lease("l1"))); !apierrors.IsForbidden(err) {
		t.Fatalf("create after the delete, stale cache: %v, want Forbidden", err)
	}
	clk.Step(forceLiveLookupTTL)
	reads := n.liveReads
	if err := p.Admit(ctx, attrs(admission.Create, "coordination.k8s.io", "leases", "x", "", lease("l1"))); err != nil || n.liveReads != reads {
		t.Fatalf("after the TTL the cache is trusted again: err %v, %d more live reads", err, n.liveReads-reads)
	}
}

func TestRecentDeletesStayBounded(t *testing.T) {
	r := newRecentDeletes(clocktesting.NewFakeClock(time.Now()))
	for i := range 3 * maxRecentDeletes {
		r.add(string(rune('a'+i%26)) + string(rune('0'+i)))
	}
	if len(r.until) != maxRecentDeletes {
		t.Fatalf("%d remembered, want %d", len(r.until), maxRecentDeletes)
	}
}
