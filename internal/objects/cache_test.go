package objects_test

import (
	"bytes"
	"testing"
	"time"
	"unsafe"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/internal/intern"
	"github.com/leasehold/leasehold/internal/objects"
	"github.com/leasehold/leasehold/internal/served"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// TestCacheDecoderSharesRepeatedStrings checks that what the watch cache
// holds shares the strings its objects repeat (see package intern) and
// still decodes to the stored values, resourceVersion included.
func TestCacheDecoderSharesRepeatedStrings(t *testing.T) {
	scheme, err := served.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	decode := objects.NewForm(scheme, served.Stored(time.Now), intern.New()).CacheOptions(watchcache.Options{}).Decode
	enc := protobuf.NewSerializer(scheme, scheme)
	stored := func(name string) []byte {
		n := &corev1.Node{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/os": "linux"}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status",
			}}},
		}
		var raw bytes.Buffer
		if err := enc.Encode(n, &raw); err != nil {
			t.Fatal(err)
		}
		return raw.Bytes()
	}
	objA, err := decode("/registry/nodes/a", stored("a"), 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	objB, err := decode("/registry/nodes/b", stored("b"), 8, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b := objA.(*corev1.Node), objB.(*corev1.Node)
	if a.Name != "a" || b.Name != "b" || a.ResourceVersion != "7" || b.ResourceVersion != "8" || a.Labels["kubernetes.io/os"] != "linux" {
		t.Fatalf("decoded %s@%s and %s@%s, labels %v", a.Name, a.ResourceVersion, b.Name, b.ResourceVersion, a.Labels)
	}
	ma, mb := a.Status.Conditions[0].Message, b.Status.Conditions[0].Message
	if ma != "kubelet is posting ready status" || unsafe.StringData(ma) != unsafe.StringData(mb) {
		t.Errorf("the two nodes' Ready messages (%q) do not share their bytes", ma)
	}

	// A new version decoded with the cached one shares its strings.
	objA2, err := decode("/registry/nodes/a", stored("a"), 9, objA)
	if err != nil {
		t.Fatal(err)
	}
	a2 := objA2.(*corev1.Node)
	if a2.Name != "a" || a2.ResourceVersion != "9" || unsafe.StringData(a2.Name) != unsafe.StringData(a.Name) ||
		unsafe.StringData(a2.Status.Conditions[0].Reason) != unsafe.StringData(a.Status.Conditions[0].Reason) {
		t.Errorf("the next version %s@%s does not share the cached version's strings", a2.Name, a2.ResourceVersion)
	}
	if !apiequality.Semantic.DeepEqual(a2.Status, a.Status) || a.ResourceVersion != "7" {
		t.Errorf("decoding the next version changed a value: %v, cached version now at %s", a2.Status, a.ResourceVersion)
	}
}

func TestCacheSameSelection(t *testing.T) {
	scheme, err := served.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	same := objects.NewForm(scheme, served.Stored(time.Now), nil).CacheOptions(watchcache.Options{}).SameSelection
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "l", Labels: map[string]string{"test": "lease"}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To("a"),
			RenewTime:      &metav1.MicroTime{Time: time.Now()},
		},
	}
	renewed := lease.DeepCopy()
	renewed.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(time.Second)}
	relabelled := lease.DeepCopy()
	relabelled.Labels["tier"] = "hot"
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "n1"}, Reason: "NodeReady"}
	counted := ev.DeepCopy()
	counted.Count = 2
	moved := ev.DeepCopy()
	moved.Reason = "NodeNotReady" // a selectable field of events
	cases := []struct {
		name      string
		got, want bool
	}{
		{"lease renewal", same("/registry/leases/default/l", lease, renewed), true},
		{"lease labels", same("/registry/leases/default/l", lease, relabelled), false},
		{"event count", same("/registry/events/default/e", ev, counted), true},
		{"event reason", same("/registry/events/default/e", ev, moved), false},
		{"unknown key", same("/registry/widgets/x", lease, renewed), false},
		{"not a key", same("leases", lease, renewed), false},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: SameSelection = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}
