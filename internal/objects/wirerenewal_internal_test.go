package objects

import (
	"bytes"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	coordinationv1 "k8s.io/api/coordination/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/internal/envelope"
	"github.com/leasehold/leasehold/internal/intern"
	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/registry/lease"
)

// wireLease is a cached lease with every kind of field set, as the cache
// holds it: decoded from its stored encoding, resourceVersion set.
func wireLease(t testing.TB) *coordinationv1.Lease {
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "kube-node-lease", UID: "u1",
			CreationTimestamp: metav1.NewTime(at),
			Labels:            map[string]string{"a": "b"},
			Annotations:       map[string]string{"c": "d"},
			Finalizers:        []string{"example.com/f"},
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "node-uid", Controller: ptr.To(true)}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "coordination.k8s.io/v1", Time: ptr.To(metav1.NewTime(at)), FieldsType: "FieldsV1",
				FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:renewTime":{}}}`)}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("n1"), LeaseDurationSeconds: ptr.To[int32](40),
			AcquireTime:      ptr.To(metav1.NewMicroTime(at)),
			RenewTime:        ptr.To(metav1.NewMicroTime(at.Add(123456 * time.Microsecond))),
			LeaseTransitions: ptr.To[int32](2),
			Strategy:         ptr.To(coordinationv1.OldestEmulationVersion),
			PreferredHolder:  ptr.To("n2")},
	}
	stored, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	cached := &coordinationv1.Lease{}
	if err := cached.Unmarshal(stored); err != nil {
		t.Fatal(err)
	}
	cached.ResourceVersion = "7"
	return cached
}

// clientBody is what a protobuf client sends for l: client-go's serializer,
// envelope and all.
func clientBody(t testing.TB, l *coordinationv1.Lease) []byte {
	var b bytes.Buffer
	c := l.DeepCopy()
	c.SetGroupVersionKind(leaseGVK)
	if err := envelopeSerializer(t).Encode(c, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func leaseRenewal() *registry.Renewal { return lease.Resource(time.Now).Renewal }

// TestRenewalFromWireMatchesDecoding sends the cached lease back with one
// field changed at a time: only a new renewTime is recognized, and the
// object recognized is the one decoding the body gives, field for field and
// byte for byte, while the cached lease stays as it was.
func TestRenewalFromWireMatchesDecoding(t *testing.T) {
	later := metav1.NewMicroTime(time.Date(2026, 11, 28, 10, 0, 10, 987654321, time.UTC))
	cases := map[string]struct {
		change func(*coordinationv1.Lease)
		want   bool
	}{
		"renewTime":                    {func(l *coordinationv1.Lease) { l.Spec.RenewTime = &later }, true},
		"renewTime unchanged":          {func(*coordinationv1.Lease) {}, true},
		"renewTime zero":               {func(l *coordinationv1.Lease) { l.Spec.RenewTime = &metav1.MicroTime{} }, true},
		"renewTime removed":            {func(l *coordinationv1.Lease) { l.Spec.RenewTime = nil }, false},
		"holderIdentity":               {func(l *coordinationv1.Lease) { l.Spec.HolderIdentity = ptr.To("n3") }, false},
		"leaseDurationSeconds":         {func(l *coordinationv1.Lease) { l.Spec.LeaseDurationSeconds = ptr.To[int32](41) }, false},
		"acquireTime":                  {func(l *coordinationv1.Lease) { l.Spec.AcquireTime = &later }, false},
		"leaseTransitions":             {func(l *coordinationv1.Lease) { l.Spec.LeaseTransitions = ptr.To[int32](3) }, false},
		"strategy":                     {func(l *coordinationv1.Lease) { l.Spec.Strategy = nil }, false},
		"preferredHolder":              {func(l *coordinationv1.Lease) { l.Spec.PreferredHolder = nil }, false},
		"resourceVersion":              {func(l *coordinationv1.Lease) { l.ResourceVersion = "8" }, false},
		"no resourceVersion":           {func(l *coordinationv1.Lease) { l.ResourceVersion = "" }, false},
		"uid":                          {func(l *coordinationv1.Lease) { l.UID = "u2" }, false},
		"name":                         {func(l *coordinationv1.Lease) { l.Name = "n2" }, false},
		"labels":                       {func(l *coordinationv1.Lease) { l.Labels = map[string]string{"a": "c"} }, false},
		"annotations":                  {func(l *coordinationv1.Lease) { l.Annotations = nil }, false},
		"finalizers":                   {func(l *coordinationv1.Lease) { l.Finalizers = nil }, false},
		"ownerReferences":              {func(l *coordinationv1.Lease) { l.OwnerReferences[0].Controller = nil }, false},
		"managedFields time":           {func(l *coordinationv1.Lease) { l.ManagedFields[0].Time = ptr.To(metav1.NewTime(later.Time)) }, false},
		"managedFields left out":       {func(l *coordinationv1.Lease) { l.ManagedFields = nil }, false},
		"renewTime and holderIdentity": {func(l *coordinationv1.Lease) { l.Spec.RenewTime = &later; l.Spec.HolderIdentity = ptr.To("n3") }, false},
	}
	rn := leaseRenewal()
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			cur := wireLease(t)
			before := cur.DeepCopy()
			req := cur.DeepCopy()
			c.change(req)
			raw, ok := envelope.Raw(clientBody(t, req), leaseGVK)
			if !ok {
				t.Fatal("the client's body is not an envelope of a Lease")
			}
			obj, _ := renewalFromWire(rn, raw, cur, nil)
			if (obj != nil) != c.want {
				t.Fatalf("recognized %v, want %v", obj != nil, c.want)
			}
			if !apiequality.Semantic.DeepEqual(cur, before) {
				t.Fatalf("the cached lease changed:\n%v\nwas\n%v", cur, before)
			}
			if obj == nil {
				return
			}
			decoded := &coordinationv1.Lease{}
			if err := decoded.Unmarshal(raw); err != nil {
				t.Fatal(err)
			}
			got := obj.(*coordinationv1.Lease)
			if !apiequality.Semantic.DeepEqual(got, decoded) {
				t.Fatalf("recognized\n%v\ndecoded\n%v", got, decoded)
			}
			if !got.Spec.RenewTime.Time.Equal(decoded.Spec.RenewTime.Time) || got.Spec.RenewTime.Location() != decoded.Spec.RenewTime.Location() {
				t.Fatalf("renewTime %v, decoded %v", got.Spec.RenewTime, decoded.Spec.RenewTime)
			}
			a, _ := got.Marshal()
			b, _ := decoded.Marshal()
			if !bytes.Equal(a, b) {
				t.Fatal("the recognized object encodes differently from the decoded one")
			}
			if got.Spec.RenewTime == cur.Spec.RenewTime {
				t.Fatal("the recognized object shares the cached renewTime")
			}
		})
	}
}

// TestRenewalFromWireNeedsTheGeneratedMarshalling: a resource without a
// renewal path, or an object without the generated marshalling, is never
// recognized.
func TestRenewalFromWireNeedsTheGeneratedMarshalling(t *testing.T) {
	cur := wireLease(t)
	raw, _ := envelope.Raw(clientBody(t, cur), leaseGVK)
	if obj, _ := renewalFromWire(leaseRenewal(), raw, &metav1.Status{}, nil); obj != nil {
		t.Fatal("recognized a renewal of a Status")
	}
	if obj, _ := renewalFromWire(leaseRenewal(), raw[:len(raw)-1], cur, nil); obj != nil {
		t.Fatal("recognized a truncated body")
	}
}

func TestSameMessageBut(t *testing.T) {
	msg := func(fields ...[]byte) []byte { return bytes.Join(fields, nil) }
	bytesField := func(n protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, n, protowire.BytesType), v)
	}
	varint := func(n protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, n, protowire.VarintType), v)
	}
	path := []protowire.Number{2, 4}
	spec := func(renew string) []byte {
		return msg(bytesField(1, []byte("h")), bytesField(4, []byte(renew)), varint(5, 3))
	}
	base := msg(bytesField(1, []byte("meta")), bytesField(2, spec("old")))
	cases := []struct {
		name string
		a    []byte
		want string
		ok   bool
	}{
		{"same", base, "old", true},
		{"renewed", msg(bytesField(1, []byte("meta")), bytesField(2, spec("newer"))), "newer", true},
		{"metadata differs", msg(bytesField(1, []byte("metb")), bytesField(2, spec("new"))), "", false},
		{"another spec field differs", msg(bytesField(1, []byte("meta")), bytesField(2, msg(bytesField(1, []byte("i")), bytesField(4, []byte("new")), varint(5, 3)))), "", false},
		{"a field more", msg(bytesField(1, []byte("meta")), bytesField(2, spec("new")), varint(3, 1)), "", false},
		{"a field less", msg(bytesField(2, spec("new"))), "", false},
		{"fields reordered", msg(bytesField(2, spec("old")), bytesField(1, []byte("meta"))), "", false},
		{"path field twice", msg(bytesField(1, []byte("meta")), bytesField(2, msg(bytesField(1, []byte("h")), bytesField(4, []byte("a")), bytesField(4, []byte("b")), varint(5, 3)))), "", false},
		{"path field not bytes", msg(bytesField(1, []byte("meta")), bytesField(2, msg(bytesField(1, []byte("h")), varint(4, 1), varint(5, 3)))), "", false},
		{"truncated", base[:len(base)-1], "", false},
		{"empty", nil, "", false},
		{"non-minimal tag", msg(bytesField(1, []byte("meta")), []byte{0x92, 0x00}, protowire.AppendBytes(nil, spec("old"))), "", false},
	}
	for _, c := range cases {
		got, ok := sameMessageBut(c.a, base, path)
		if ok != c.ok || string(got) != c.want {
			t.Errorf("%s: got %q, %v; want %q, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// FuzzRenewalFromWire: whatever a body holds, an object recognized from it
// is the object decoding it gives.
func FuzzRenewalFromWire(f *testing.F) {
	cur := wireLease(f)
	renewed := cur.DeepCopy()
	renewed.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Date(2026, 11, 28, 10, 0, 10, 987654000, time.UTC)))
	for _, l := range []*coordinationv1.Lease{cur, renewed} {
		raw, _ := envelope.Raw(clientBody(f, l), leaseGVK)
		f.Add(raw)
	}
	rn := leaseRenewal()
	f.Fuzz(func(t *testing.T, raw []byte) {
		obj, _ := renewalFromWire(rn, raw, cur, nil)
		if obj == nil {
			return
		}
		decoded := &coordinationv1.Lease{}
		if err := decoded.Unmarshal(raw); err != nil {
			t.Fatalf("recognized a body that does not decode: %v", err)
		}
		if !apiequality.Semantic.DeepEqual(obj, decoded) {
			t.Fatalf("recognized\n%v\ndecoded\n%v", obj, decoded)
		}
	})
}

// BenchmarkRenewalRequest compares the two ways a renewal's request object
// is had: recognized against the cached lease, or decoded (what the handler
// did before, and does for anything not recognized). Interning the result
// against the cached lease is part of both, as the hand-off does it.
func BenchmarkRenewalRequest(b *testing.B) {
	cur := wireLease(b)
	req := cur.DeepCopy()
	req.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Date(2026, 11, 28, 10, 0, 10, 987654000, time.UTC)))
	body := clientBody(b, req)
	rn := leaseRenewal()
	tab := intern.New()
	tab.Object(cur)
	b.Run("recognized", func(b *testing.B) {
		b.ReportAllocs()
		var scratch []byte
		for b.Loop() {
			raw, _ := envelope.Raw(body, leaseGVK)
			var obj runtime.Object
			obj, scratch = renewalFromWire(rn, raw, cur, scratch)
			if obj == nil {
				b.Fatal("not recognized")
			}
			tab.ObjectLike(obj, cur)
		}
	})
	b.Run("decoded", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			obj := &coordinationv1.Lease{}
			if done, err := UnmarshalEnveloped(body, leaseGVK, obj); !done || err != nil {
				b.Fatal(done, err)
			}
			tab.ObjectLike(obj, cur)
		}
	})
}
