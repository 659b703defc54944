package apiserver_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/utils/ptr"
)

// A watch cache that lags the store must not fail or stale the requests that
// need the current object: GETs without a resourceVersion and every write
// read the key from storage, as kube-apiserver reads etcd. Only a
// resourceVersion newer than the store still waits and times out.
func TestCurrentReadsDoNotWaitForALaggingCache(t *testing.T) {
	h := newDirectHandler(t)
	pb := protobuf.NewSerializer(h.scheme, h.scheme)
	const ns = "kube-node-lease"
	const leases = "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases"
	createNamespace(t, h.api, ns)
	lease := func(name string) *coordinationv1.Lease {
		return &coordinationv1.Lease{
			TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40)},
		}
	}
	v1 := renewOnce(t, h.api, pb, http.MethodPost, leases, lease("a"), http.StatusCreated)
	other := renewOnce(t, h.api, pb, http.MethodPost, leases, lease("other"), http.StatusCreated)
	// The cache holds both leases, then stops following the store.
	h.lagFrom(t, other.ResourceVersion)
	reads := func() float64 {
		return testutil.ToFloat64(h.metrics.StorageReads.WithLabelValues("get", "coordination.k8s.io", "leases"))
	}
	get := func(name string, want int) *coordinationv1.Lease {
		t.Helper()
		code, body := do(h.api, http.MethodGet, leases+"/"+name, "", nil)
		if code != want {
			t.Fatalf("GET %s: %d %s, want %d", name, code, body, want)
		}
		if code != http.StatusOK {
			return nil
		}
		out := &coordinationv1.Lease{}
		if _, _, err := pb.Decode(body, nil, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	// The cache has "a" at v1: nothing was written since, but the cache
	// cannot know, so the store answers and the cached object is returned.
	if got := get("a", http.StatusOK); got.ResourceVersion != v1.ResourceVersion {
		t.Fatalf("GET a before any write: resourceVersion %s, want %s", got.ResourceVersion, v1.ResourceVersion)
	}

	// The client's resourceVersion is one the cache has: the update goes on.
	v1.TypeMeta = metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"}
	v1.Spec.HolderIdentity = ptr.To("b")
	start := time.Now()
	v2 := renewOnce(t, h.api, pb, http.MethodPut, leases+"/a", v1, http.StatusOK)
	if got := get("a", http.StatusOK); got.ResourceVersion != v2.ResourceVersion || *got.Spec.HolderIdentity != "b" {
		t.Fatalf("GET after update: resourceVersion %s holder %s, want %s and b", got.ResourceVersion, *got.Spec.HolderIdentity, v2.ResourceVersion)
	}
	// The cache has never seen v2: the next renewal must still go through.
	v2.TypeMeta = v1.TypeMeta
	v2.Spec.HolderIdentity = ptr.To("c")
	v3 := renewOnce(t, h.api, pb, http.MethodPut, leases+"/a", v2, http.StatusOK)
	// A client that missed v3 conflicts, as it would with a fresh cache.
	v2.Spec.HolderIdentity = ptr.To("stale")
	if code, body := do(h.api, http.MethodPut, leases+"/a", "application/vnd.kubernetes.protobuf", encode(t, "application/vnd.kubernetes.protobuf", v2)); code != http.StatusConflict {
		t.Fatalf("PUT with a superseded resourceVersion: %d %s, want 409", code, body)
	}
	patch := `{"spec":{"holderIdentity":"d"}}`
	if code, body := do(h.api, http.MethodPatch, leases+"/a", "application/merge-patch+json", []byte(patch)); code != http.StatusOK {
		t.Fatalf("PATCH: %d %s", code, body)
	}
	if got := get("a", http.StatusOK); *got.Spec.HolderIdentity != "d" {
		t.Fatalf("GET after patch: holder %s, want d (v3 was %s)", *got.Spec.HolderIdentity, v3.ResourceVersion)
	}
	if code, body := do(h.api, http.MethodDelete, leases+"/a", "", nil); code != http.StatusOK {
		t.Fatalf("DELETE: %d %s", code, body)
	}
	get("a", http.StatusNotFound)
	// A key the cache still holds at its current version is served from it.
	get("other", http.StatusOK)
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("reads with a lagging cache took %v: they waited for it", elapsed)
	}
	if n := reads(); n < 6 {
		t.Errorf("storage reads counted: %v, want at least 6", n)
	}

	// A consistent list waits for the cache as long as kube-apiserver does,
	// then reads storage, which has "a" deleted and "b" created since.
	renewOnce(t, h.api, pb, http.MethodPost, leases, lease("b"), http.StatusCreated)
	list := func(query string) *coordinationv1.LeaseList {
		t.Helper()
		code, body := do(h.api, http.MethodGet, leases+query, "", nil)
		if code != http.StatusOK {
			t.Fatalf("LIST %s: %d %s", query, code, body)
		}
		out := &coordinationv1.LeaseList{}
		if _, _, err := pb.Decode(body, nil, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	names := func(l *coordinationv1.LeaseList) (n []string) {
		for _, it := range l.Items {
			n = append(n, it.Name)
		}
		return n
	}
	if got := names(list("")); !slices.Equal(got, []string{"b", "other"}) {
		t.Fatalf("consistent list with a lagging cache: %v, want [b other]", got)
	}
	page := list("?limit=1")
	if got := names(page); !slices.Equal(got, []string{"b"}) || page.Continue == "" {
		t.Fatalf("first page: %v continue %q, want [b] and a continue token", got, page.Continue)
	}
	if got := names(list("?limit=1&continue=" + page.Continue)); !slices.Equal(got, []string{"other"}) {
		t.Fatalf("second page: %v, want [other]", got)
	}
	if n := testutil.ToFloat64(h.metrics.StorageReads.WithLabelValues("list", "coordination.k8s.io", "leases")); n != 2 {
		t.Errorf("storage lists counted: %v, want 2", n)
	}

	// A resourceVersion the store has not reached waits for the cache and
	// times out as kube-apiserver does.
	future := strconv.Itoa(1 << 40)
	code, body := do(h.api, http.MethodGet, leases+"/other?resourceVersion="+future, "", nil)
	if code != http.StatusGatewayTimeout {
		t.Fatalf("GET at a future resourceVersion: %d %s, want 504", code, body)
	}
}

// An update of an object that the store deleted but the lagging cache still
// holds gets the answer a fresh cache would give (kube-apiserver re-reads
// etcd when its cached state proves stale): with the object's uid, the
// uid precondition's 409; without one, for a kind that PUT cannot create,
// 404 (not the precondition of the uid the stale object had). Before,
// it was the store's 404 whenever the cache had not yet seen the delete
// (TestLeaseUpdateSemantics failed about once in 120 runs).
func TestUpdateOfAnObjectDeletedBehindTheCache(t *testing.T) {
	h := newDirectHandler(t)
	pb := protobuf.NewSerializer(h.scheme, h.scheme)
	const ns = "kube-node-lease"
	const leases = "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases"
	createNamespace(t, h.api, ns)
	l := renewOnce(t, h.api, pb, http.MethodPost, leases, &coordinationv1.Lease{
		TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: ns},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("x")},
	}, http.StatusCreated)
	nodeBody := `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}`
	code, body := do(h.api, http.MethodPost, "/api/v1/nodes", "application/json", []byte(nodeBody))
	if code != http.StatusCreated {
		t.Fatalf("creating node: %d %s", code, body)
	}
	node := &corev1.Node{}
	if _, _, err := pb.Decode(body, nil, node); err != nil {
		t.Fatal(err)
	}
	h.lagFrom(t, node.ResourceVersion)
	for _, path := range []string{leases + "/gone", "/api/v1/nodes/n1"} {
		if code, body := do(h.api, http.MethodDelete, path, "", nil); code != http.StatusOK {
			t.Fatalf("DELETE %s: %d %s", path, code, body)
		}
	}

	// status decodes the Status an answer carries.
	status := func(body []byte) metav1.Status {
		t.Helper()
		var st metav1.Status
		if _, _, err := pb.Decode(body, nil, &st); err != nil {
			t.Fatalf("decoding %q: %v", body, err)
		}
		return st
	}
	l.TypeMeta = metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"}
	code, body = do(h.api, http.MethodPut, leases+"/gone", "application/json", encode(t, "application/json", l))
	want := `Operation cannot be fulfilled on leases.coordination.k8s.io "gone": StorageError: invalid object, Code: 4, Key: /registry/leases/kube-node-lease/gone, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: ` + string(l.UID) + `, UID in object meta: `
	if st := status(body); code != http.StatusConflict || st.Reason != metav1.StatusReasonConflict || st.Message != want {
		t.Errorf("PUT of the deleted lease with its uid: %d %s %q\nwant 409 Conflict %q", code, st.Reason, st.Message, want)
	}

	node.UID = ""
	node.Labels = map[string]string{"changed": "yes"}
	nodeJSON, err := json.Marshal(node)
	if err != nil {
		t.Fatal(err)
	}
	code, body = do(h.api, http.MethodPut, "/api/v1/nodes/n1", "application/json", nodeJSON)
	if st := status(body); code != http.StatusNotFound || st.Reason != metav1.StatusReasonNotFound || st.Message != `nodes "n1" not found` {
		t.Errorf("PUT of the deleted node: %d %s %q\nwant 404 NotFound %q", code, st.Reason, st.Message, `nodes "n1" not found`)
	}
}

// A PUT with a stale resourceVersion of an object that the store deleted
// but the lagging cache still holds is answered as with a fresh cache: a
// Lease (PUT may create it) is created, a Node is 404. It was the 409 of
// the stale object's resourceVersion, an answer no order of the writes
// explains (test/robustness: an update at a resourceVersion the Lease had
// before it was deleted answered Conflict after the delete was
// acknowledged).
func TestStaleUpdateOfAnObjectDeletedBehindTheCache(t *testing.T) {
	h := newDirectHandler(t)
	pb := protobuf.NewSerializer(h.scheme, h.scheme)
	const ns = "kube-node-lease"
	const leases = "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases"
	createNamespace(t, h.api, ns)
	lease := &coordinationv1.Lease{
		TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: ns},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("x")},
	}
	v1 := renewOnce(t, h.api, pb, http.MethodPost, leases, lease, http.StatusCreated)
	v1.TypeMeta = lease.TypeMeta
	v2 := renewOnce(t, h.api, pb, http.MethodPut, leases+"/gone", v1, http.StatusOK)
	code, body := do(h.api, http.MethodPost, "/api/v1/nodes", "application/json", []byte(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}`))
	if code != http.StatusCreated {
		t.Fatalf("creating node: %d %s", code, body)
	}
	n1 := &corev1.Node{}
	if _, _, err := pb.Decode(body, nil, n1); err != nil {
		t.Fatal(err)
	}
	code, body = do(h.api, http.MethodPut, "/api/v1/nodes/n1", "application/json", []byte(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","resourceVersion":"`+n1.ResourceVersion+`","labels":{"a":"b"}}}`))
	if code != http.StatusOK {
		t.Fatalf("updating node: %d %s", code, body)
	}
	n2 := &corev1.Node{}
	if _, _, err := pb.Decode(body, nil, n2); err != nil {
		t.Fatal(err)
	}
	h.lagFrom(t, n2.ResourceVersion)
	for _, path := range []string{leases + "/gone", "/api/v1/nodes/n1"} {
		if code, body := do(h.api, http.MethodDelete, path, "", nil); code != http.StatusOK {
			t.Fatalf("DELETE %s: %d %s", path, code, body)
		}
	}
	if v2.ResourceVersion == v1.ResourceVersion {
		t.Fatal("the update did not change the resourceVersion")
	}
	// v1's resourceVersion is stale for the cache (which holds v2) and
	// the object is gone from the store.
	v1.UID = ""
	code, body = do(h.api, http.MethodPut, leases+"/gone", "application/json", encode(t, "application/json", v1))
	if code != http.StatusCreated {
		t.Errorf("PUT of the deleted lease at a stale resourceVersion: %d %s, want 201 (created, as with a fresh cache)", code, body)
	}
	code, body = do(h.api, http.MethodPut, "/api/v1/nodes/n1", "application/json", []byte(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","resourceVersion":"`+n1.ResourceVersion+`"}}`))
	if code != http.StatusNotFound {
		t.Errorf("PUT of the deleted node at a stale resourceVersion: %d %s, want 404", code, body)
	}
}
