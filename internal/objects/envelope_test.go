package objects

import (
	"bytes"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/internal/served"
)

var (
	leaseGVK = coordinationv1.SchemeGroupVersion.WithKind("Lease")
	nodeGVK  = corev1.SchemeGroupVersion.WithKind("Node")
)

func envelopeSerializer(t testing.TB) *protobuf.Serializer {
	t.Helper()
	scheme, err := served.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	return protobuf.NewSerializer(scheme, scheme)
}

func enveloped(t testing.TB, s *protobuf.Serializer, obj runtime.Object) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := s.Encode(obj, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func envelopeLease() *coordinationv1.Lease {
	now := metav1.NewMicroTime(time.Date(2026, 11, 24, 12, 0, 0, 123456000, time.UTC))
	return &coordinationv1.Lease{
		TypeMeta: metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "node-1", Namespace: "kube-node-lease", UID: "u-1",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-1", UID: "n-1"}},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "agent", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "coordination.k8s.io/v1",
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:renewTime":{}}}`),
			}},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("node-1"), LeaseDurationSeconds: ptr.To[int32](40),
			AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr.To[int32](3),
		},
	}
}

func envelopeNode() *corev1.Node {
	return &corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"kubernetes.io/os": "linux"}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}},
		},
	}
}

// TestUnmarshalEnvelopedMatchesSerializer: what the fast path decodes is
// exactly what the protobuf serializer decodes, and it shares no memory with
// its input.
func TestUnmarshalEnvelopedMatchesSerializer(t *testing.T) {
	s := envelopeSerializer(t)
	for _, tc := range []struct {
		obj, fast, slow runtime.Object
		gvk             schema.GroupVersionKind
	}{
		{envelopeLease(), &coordinationv1.Lease{}, &coordinationv1.Lease{}, leaseGVK},
		{envelopeNode(), &corev1.Node{}, &corev1.Node{}, nodeGVK},
	} {
		data := enveloped(t, s, tc.obj)
		done, err := UnmarshalEnveloped(data, tc.gvk, tc.fast)
		if !done || err != nil {
			t.Fatalf("%v: fast path declined (%v) or failed: %v", tc.gvk, done, err)
		}
		if _, _, err := s.Decode(data, nil, tc.slow); err != nil {
			t.Fatal(err)
		}
		tc.fast.GetObjectKind().SetGroupVersionKind(tc.gvk)
		if !apiequality.Semantic.DeepEqual(tc.fast, tc.slow) {
			t.Fatalf("%v: fast path decoded\n%#v\nserializer decoded\n%#v", tc.gvk, tc.fast, tc.slow)
		}
		for i := range data {
			data[i] = 0
		}
		if !apiequality.Semantic.DeepEqual(tc.fast, tc.slow) {
			t.Fatalf("%v: the decoded object changed with its input buffer", tc.gvk)
		}
	}
}

// TestUnmarshalEnvelopedDeclines: anything but an envelope naming exactly
// the expected kind goes to the serializer, and obj is left alone.
func TestUnmarshalEnvelopedDeclines(t *testing.T) {
	s := envelopeSerializer(t)
	lease := enveloped(t, s, envelopeLease())
	withTypeMeta := func(apiVersion, kind string) []byte {
		l := envelopeLease()
		l.APIVersion, l.Kind = apiVersion, kind
		var b bytes.Buffer
		// Encode writes the TypeMeta the object carries.
		if err := s.Encode(l, &b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	withEncoding := append(bytes.Clone(lease), 0x1a, 0x04, 'g', 'z', 'i', 'p') // contentEncoding "gzip"
	withVarint := append(bytes.Clone(lease), 0x28, 0x01)                       // field 5, varint
	for name, data := range map[string][]byte{
		"no magic":          lease[4:],
		"empty":             nil,
		"truncated":         lease[:len(lease)-3],
		"other kind":        withTypeMeta("coordination.k8s.io/v1", "Node"),
		"other version":     withTypeMeta("coordination.k8s.io/v1beta1", "Lease"),
		"core version":      withTypeMeta("v1", "Lease"),
		"no group":          withTypeMeta("", "Lease"),
		"no kind":           withTypeMeta("coordination.k8s.io/v1", ""),
		"content encoding":  withEncoding,
		"non-bytes field":   withVarint,
		"group with suffix": withTypeMeta("coordination.k8s.io/v1/x", "Lease"),
	} {
		var into coordinationv1.Lease
		done, err := UnmarshalEnveloped(data, leaseGVK, &into)
		if done || err != nil {
			t.Errorf("%s: fast path took it (%v, %v)", name, done, err)
		}
		if !apiequality.Semantic.DeepEqual(into, coordinationv1.Lease{}) {
			t.Errorf("%s: declined but changed the object: %#v", name, into)
		}
	}
	if done, _ := UnmarshalEnveloped(enveloped(t, s, envelopeNode()), nodeGVK, &corev1.Node{}); !done {
		t.Error("a core-group envelope was declined")
	}
}

// FuzzUnmarshalEnveloped: whenever the fast path takes an input, the
// serializer agrees on it: both fail, or both decode the same object.
func FuzzUnmarshalEnveloped(f *testing.F) {
	s := envelopeSerializer(f)
	f.Add(enveloped(f, s, envelopeLease()))
	l := envelopeLease()
	l.Spec.HolderIdentity = nil
	f.Add(enveloped(f, s, l))
	f.Add([]byte("k8s\x00\x0a\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast, slow coordinationv1.Lease
		done, err := UnmarshalEnveloped(data, leaseGVK, &fast)
		if !done {
			return
		}
		_, _, serr := s.Decode(data, nil, &slow)
		if (err == nil) != (serr == nil) {
			t.Fatalf("fast path error %v, serializer error %v", err, serr)
		}
		if err != nil {
			return
		}
		fast.SetGroupVersionKind(leaseGVK)
		if !apiequality.Semantic.DeepEqual(&fast, &slow) {
			t.Fatalf("fast path decoded\n%#v\nserializer decoded\n%#v", &fast, &slow)
		}
	})
}
