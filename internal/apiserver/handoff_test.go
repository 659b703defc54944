package apiserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/internal/intern"
	"github.com/leasehold/leasehold/internal/objects"
	"github.com/leasehold/leasehold/internal/served"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// An update of a lease hands the object it wrote to the watch cache, which
// then decodes nothing; what the cache serves must be what decoding the
// stored value gives, to the byte in JSON and in protobuf, whether the
// update came as protobuf or as JSON.
func TestHandedOffLeaseEncodesAsTheStoredOne(t *testing.T) {
	h := newDirectHandler(t)
	pb := protobuf.NewSerializer(h.scheme, h.scheme)
	const path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
	const key = "/registry/leases/kube-node-lease/n1"
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "kube-node-lease",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "node-uid"}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("n1"), LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime: ptr.To(metav1.NewMicroTime(time.Now()))},
	}
	createNamespace(t, h.api, "kube-node-lease")
	l.TypeMeta = metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"}
	current := renewOnce(t, h.api, pb, "POST", path, l, 201)
	decode := objects.NewForm(h.scheme, served.Stored(time.Now), intern.New()).CacheOptions(watchcache.Options{}).Decode
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// cached waits until the cache holds the write that answered answer.
	cached := func(answer *coordinationv1.Lease) {
		t.Helper()
		h.waitCached(t, answer.ResourceVersion)
	}
	check := func(what string, answer *coordinationv1.Lease, decodesBefore int64) {
		t.Helper()
		cached(answer)
		if n := h.decodes.Load() - decodesBefore; n != 0 {
			t.Errorf("%s: the cache decoded %d values", what, n)
		}
		obj, ok := h.cache.Get(key)
		if !ok {
			t.Fatalf("%s: %s not cached", what, key)
		}
		kv, err := h.store.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := decode(key, kv.Value, kv.ModRevision, nil)
		if err != nil {
			t.Fatal(err)
		}
		gotJSON, err1 := json.Marshal(obj)
		wantJSON, err2 := json.Marshal(stored)
		gotPB, err3 := obj.(*coordinationv1.Lease).Marshal()
		wantPB, err4 := stored.(*coordinationv1.Lease).Marshal()
		for _, err := range []error{err1, err2, err3, err4} {
			if err != nil {
				t.Fatal(err)
			}
		}
		if string(gotJSON) != string(wantJSON) || string(gotPB) != string(wantPB) {
			t.Errorf("%s: the cache serves\n%s\nwhile the store holds\n%s", what, gotJSON, wantJSON)
		}
		if got := obj.(*coordinationv1.Lease).ResourceVersion; got != answer.ResourceVersion {
			t.Errorf("%s: cached resourceVersion %s, answered %s", what, got, answer.ResourceVersion)
		}
	}

	// The create is decoded: count from once the cache has it.
	cached(current)
	before := h.decodes.Load()
	current.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Now().Add(time.Second)))
	current = renewOnce(t, h.api, pb, "PUT", path+"/n1", current, 200)
	check("protobuf renewal", current, before)

	// JSON, with an empty list where protobuf would decode nil.
	current.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Now().Add(2 * time.Second)))
	current.Finalizers = []string{}
	before = h.decodes.Load()
	answer := putJSON(t, h.api, pb, path+"/n1", current)
	check("JSON renewal", answer, before)
}

// putJSON updates l with a JSON PUT to path and returns the answer.
func putJSON(tb testing.TB, api http.Handler, pb *protobuf.Serializer, path string, l *coordinationv1.Lease) *coordinationv1.Lease {
	tb.Helper()
	body, err := json.Marshal(l)
	if err != nil {
		tb.Fatal(err)
	}
	code, resp := do(api, "PUT", path, "application/json", body)
	if code != 200 {
		tb.Fatalf("JSON PUT %s: %d %s", path, code, resp)
	}
	out := &coordinationv1.Lease{}
	if _, _, err := pb.Decode(resp, nil, out); err != nil {
		tb.Fatal(err)
	}
	return out
}

// A protobuf renewal (the cached lease sent back with a new renewTime) is
// taken from the cached lease, not decoded (objects.Store.RenewalFromWire):
// the lease it writes shares the cached version's labels map, which a
// decoded body never does. A JSON renewal is decoded.
func TestProtobufRenewalIsTakenFromTheCache(t *testing.T) {
	h := newDirectHandler(t)
	pb := protobuf.NewSerializer(h.scheme, h.scheme)
	const path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
	const key = "/registry/leases/kube-node-lease/n1"
	createNamespace(t, h.api, "kube-node-lease")
	l := &coordinationv1.Lease{
		TypeMeta: metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "kube-node-lease", Labels: map[string]string{"a": "b"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "node-uid"}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("n1"), LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime: ptr.To(metav1.NewMicroTime(time.Now()))},
	}
	answer := renewOnce(t, h.api, pb, "POST", path, l, 201)
	labelsOf := func(rv string) (uintptr, *coordinationv1.Lease) {
		t.Helper()
		h.waitCached(t, rv)
		obj, ok := h.cache.Get(key)
		if !ok {
			t.Fatalf("%s not cached", key)
		}
		c := obj.(*coordinationv1.Lease)
		if c.ResourceVersion != rv {
			t.Fatalf("cached resourceVersion %s, want %s", c.ResourceVersion, rv)
		}
		return reflect.ValueOf(c.Labels).Pointer(), c
	}
	before, _ := labelsOf(answer.ResourceVersion)

	answer.TypeMeta = l.TypeMeta
	answer.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Now().Add(time.Second).Truncate(time.Microsecond)))
	renewed := renewOnce(t, h.api, pb, "PUT", path+"/n1", answer, 200)
	after, cached := labelsOf(renewed.ResourceVersion)
	if after != before {
		t.Error("a protobuf renewal was decoded: the cached lease has a new labels map")
	}
	if !cached.Spec.RenewTime.Equal(answer.Spec.RenewTime) || !renewed.Spec.RenewTime.Equal(answer.Spec.RenewTime) {
		t.Errorf("renewTime cached %v, answered %v, sent %v", cached.Spec.RenewTime, renewed.Spec.RenewTime, answer.Spec.RenewTime)
	}

	renewed.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Now().Add(2 * time.Second)))
	out := putJSON(t, h.api, pb, path+"/n1", renewed)
	if decoded, _ := labelsOf(out.ResourceVersion); decoded == after {
		t.Error("a JSON renewal shares the cached labels map")
	}
}

// Recognized renewals share memory with the cached leases that readers use
// at the same time: renewing leases from several goroutines while another
// reads and encodes every cached lease must neither write into what it
// reads (go test -race sees such a write; a map written while read can
// also crash without it) nor lose a renewal.
func TestConcurrentRecognizedRenewalsLeaveTheCacheAlone(t *testing.T) {
	h := newDirectHandler(t)
	pb := protobuf.NewSerializer(h.scheme, h.scheme)
	const path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
	createNamespace(t, h.api, "kube-node-lease")
	const leases, renewals = 8, 40
	current := make([]*coordinationv1.Lease, leases)
	for i := range current {
		name := "n" + strconv.Itoa(i)
		current[i] = renewOnce(t, h.api, pb, "POST", path, &coordinationv1.Lease{
			TypeMeta: metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-node-lease",
				Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: types.UID("uid-" + name)}}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40),
				RenewTime: ptr.To(metav1.NewMicroTime(time.Now()))},
		}, 201)
	}
	stop := make(chan struct{})
	read := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				read <- nil
				return
			default:
			}
			for i := range leases {
				if obj, ok := h.cache.Get("/registry/leases/kube-node-lease/n" + strconv.Itoa(i)); ok {
					if _, err := json.Marshal(obj); err != nil {
						read <- err
						return
					}
				}
			}
		}
	}()
	var wg sync.WaitGroup
	for i := range current {
		wg.Go(func() {
			for range renewals {
				l := current[i]
				l.TypeMeta = metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"}
				l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Now().Truncate(time.Microsecond)))
				var body bytes.Buffer
				if err := pb.Encode(l, &body); err != nil {
					t.Error(err)
					return
				}
				code, resp := do(h.api, "PUT", path+"/"+l.Name, "application/vnd.kubernetes.protobuf", body.Bytes())
				out := &coordinationv1.Lease{}
				if code != 200 {
					t.Errorf("renewing %s: %d %s", l.Name, code, resp)
					return
				}
				if _, _, err := pb.Decode(resp, nil, out); err != nil {
					t.Error(err)
					return
				}
				current[i] = out
			}
		})
	}
	wg.Wait()
	close(stop)
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	for _, l := range current {
		h.waitCached(t, l.ResourceVersion)
		obj, _ := h.cache.Get("/registry/leases/kube-node-lease/" + l.Name)
		c := obj.(*coordinationv1.Lease)
		if !c.Spec.RenewTime.Equal(l.Spec.RenewTime) || c.Labels["a"] != "b" || c.Annotations["c"] != "d" || c.OwnerReferences[0].Name != l.Name {
			t.Errorf("%s cached as %v, last answered %v", l.Name, c, l)
		}
	}
}
