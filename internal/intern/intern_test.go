package intern

import (
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// node is a registered node as the agent writes it, decoded from protobuf
// so that every string is its own allocation, as in the watch cache.
func node(t testing.TB, name, rv string) *corev1.Node {
	t.Helper()
	now := metav1.Now()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, UID: types.UID("uid-" + name), ResourceVersion: rv,
			Labels: map[string]string{"kubernetes.io/os": "linux", "kubernetes.io/hostname": name},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "leasehold-agent", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{".":{},"f:kubernetes.io/os":{}}}}`),
			}},
		},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}, Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "kubelet is posting ready status", LastHeartbeatTime: now,
		}}},
	}
	out := &corev1.Node{}
	viaProtobuf(t, n, out)
	return out
}

// viaProtobuf decodes into out what in encodes to.
func viaProtobuf(t testing.TB, in interface{ Marshal() ([]byte, error) }, out interface{ Unmarshal([]byte) error }) {
	t.Helper()
	raw, err := in.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Unmarshal(raw); err != nil {
		t.Fatal(err)
	}
}

func sameData(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

func TestObjectSharesRepeatedValuesAndKeepsThemEqual(t *testing.T) {
	tab := New()
	a, b := node(t, "node-a", "10"), node(t, "node-b", "10")
	wantA, wantB := a.DeepCopy(), b.DeepCopy()
	tab.Object(a)
	tab.Object(b)

	if !apiequality.Semantic.DeepEqual(a, wantA) || !apiequality.Semantic.DeepEqual(b, wantB) {
		t.Fatalf("interning changed an object:\n%v\n%v", a, wantA)
	}
	ca, cb := a.Status.Conditions[0], b.Status.Conditions[0]
	if !sameData(ca.Message, cb.Message) || !sameData(ca.Reason, cb.Reason) || !sameData(string(ca.Type), string(cb.Type)) {
		t.Error("condition strings are not shared")
	}
	ra, rb := a.ManagedFields[0].FieldsV1.GetRawBytes(), b.ManagedFields[0].FieldsV1.GetRawBytes()
	if &ra[0] != &rb[0] {
		t.Error("managedFields sets are not shared")
	}
	if cap(ra) != len(ra) {
		t.Errorf("an interned []byte has spare capacity %d > %d: an append would write into the canonical copy", cap(ra), len(ra))
	}
	if !sameData(a.ManagedFields[0].Manager, b.ManagedFields[0].Manager) {
		t.Error("managedFields manager is not shared")
	}
	var keyA, keyB string
	for k := range a.Labels {
		if k == "kubernetes.io/os" {
			keyA = k
		}
	}
	for k := range b.Labels {
		if k == "kubernetes.io/os" {
			keyB = k
		}
	}
	if !sameData(keyA, keyB) || !sameData(a.Labels["kubernetes.io/os"], b.Labels["kubernetes.io/os"]) {
		t.Error("label keys or values are not shared")
	}
	if !sameData(firstKey(a.Status.Capacity), firstKey(b.Status.Capacity)) {
		t.Error("resource list keys are not shared")
	}
	if sameData(a.Name, b.Name) {
		t.Error("different names share data")
	}
	if sameData(a.ResourceVersion, b.ResourceVersion) {
		t.Error("resourceVersion was interned")
	}
}

func TestObjectSharesAcrossVersionsOfOneObject(t *testing.T) {
	tab := New()
	holder := "node-a"
	lease := func(rv string) *coordinationv1.Lease {
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: "node-a", Namespace: "kube-node-lease", ResourceVersion: rv},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
		}
		out := &coordinationv1.Lease{}
		viaProtobuf(t, l, out)
		return out
	}
	v1, v2 := lease("1"), lease("2")
	tab.Object(v1)
	tab.Object(v2)
	if !sameData(*v1.Spec.HolderIdentity, *v2.Spec.HolderIdentity) || !sameData(v1.Namespace, v2.Namespace) {
		t.Error("a lease's versions do not share holder and namespace")
	}
	if !sameData(v1.Name, *v2.Spec.HolderIdentity) {
		t.Error("equal strings in different fields are not shared")
	}
}

// TestCollectedValuesAreSwept checks that the table does not keep what no
// object references: entries whose value was collected go at the next sweep.
func TestCollectedValuesAreSwept(t *testing.T) {
	tab := New()
	keep := node(t, "kept-node-with-a-long-name", "1")
	tab.Object(keep)
	for i := range 3 * minSweep {
		// Long enough not to share a tiny-allocation block with a live value.
		tab.String(fmt.Sprintf("a-string-nobody-keeps-%020d", i))
	}
	runtime.GC()
	tab.mu.Lock()
	tab.sweepLocked()
	tab.mu.Unlock()
	if n := tab.Len(); n > 64 {
		t.Fatalf("%d entries survive the sweep; want only the kept node's values", n)
	}
	again := node(t, "kept-node-with-a-long-name", "2")
	tab.Object(again)
	if !sameData(keep.Status.Conditions[0].Message, again.Status.Conditions[0].Message) || !sameData(keep.Name, again.Name) {
		t.Error("a value still referenced lost its canonical entry in the sweep")
	}
	runtime.KeepAlive(keep)
}

func TestObjectIgnoresNilAndNonPointers(t *testing.T) {
	tab := New()
	tab.Object(nil)
	tab.Object((*corev1.Node)(nil))
	tab.Object(corev1.Node{})
	if tab.Len() != 0 {
		t.Fatalf("table has %d entries", tab.Len())
	}
}

func BenchmarkObjectNode(b *testing.B) {
	tab := New()
	nodes := make([]*corev1.Node, 1024)
	for i := range nodes {
		nodes[i] = node(b, fmt.Sprintf("node-%04d", i), "1")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		tab.Object(nodes[i%len(nodes)])
	}
}

// TestHashCollisionsKeepDistinctValues forces strings onto one hash: each
// keeps its own canonical copy, and a collected first copy's slot is reused.
func TestHashCollisionsKeepDistinctValues(t *testing.T) {
	tab := New()
	const h = 42
	a := tab.canonicalLocked(h, "first-value-of-some-length")
	b := tab.canonicalLocked(h, "second-value-of-some-length")
	if a != "first-value-of-some-length" || b != "second-value-of-some-length" {
		t.Fatalf("got %q, %q", a, b)
	}
	if again := tab.canonicalLocked(h, "second-value-of-some-length"); !sameData(again, b) {
		t.Error("a colliding value lost its canonical copy")
	}
	if again := tab.canonicalLocked(h, "first-value-of-some-length"); !sameData(again, a) {
		t.Error("the first value lost its canonical copy")
	}
	if n := tab.Len(); n != 2 {
		t.Errorf("%d entries, want 2", n)
	}
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
}

func firstKey(l corev1.ResourceList) string {
	for k := range l {
		return string(k)
	}
	return ""
}
