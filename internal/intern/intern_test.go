package intern

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
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

// TestUIDKeyedFieldSetsStayOutOfTheTable checks the managedFields exception:
// a node lease's set keys its owner reference by the Node's uid, so no other
// object has it. It must not take a table entry, must still be taken from a
// previous version, and a set naming no uid is still shared through the
// table.
func TestUIDKeyedFieldSetsStayOutOfTheTable(t *testing.T) {
	tab := New()
	const owned = `{"f:metadata":{"f:ownerReferences":{".":{},"k:{\"uid\":\"0b8d3c52-5f43-4b8f-9a7e-1c2d3e4f5a6b\"}":{}}},"f:spec":{"f:renewTime":{}}}`
	const plain = `{"f:spec":{"f:holderIdentity":{},"f:renewTime":{}}}`
	lease := func(rv, set string) *coordinationv1.Lease {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Name: "node-a", Namespace: "kube-node-lease", ResourceVersion: rv,
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "coordination.k8s.io/v1",
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(set),
			}},
		}}
		out := &coordinationv1.Lease{}
		viaProtobuf(t, l, out)
		return out
	}
	raw := func(l *coordinationv1.Lease) []byte { return l.ManagedFields[0].FieldsV1.GetRawBytes() }

	v1 := lease("1", owned)
	tab.Object(v1)
	if string(raw(v1)) != owned {
		t.Fatalf("interning changed the set: %s", raw(v1))
	}
	entries := tab.Len()
	// Another lease whose strings are all v1's but for its set: a set
	// naming another uid takes no entry, one naming none takes one.
	tab.Object(lease("1", strings.Replace(owned, "0b8d3c52", "77777777", 1)))
	if got := tab.Len(); got != entries {
		t.Errorf("a set naming a uid took a table entry: %d entries, want %d", got, entries)
	}
	tab.Object(lease("1", plain+" "))
	if got := tab.Len(); got != entries+1 {
		t.Errorf("a set naming no uid: %d entries, want %d", got, entries+1)
	}
	other := lease("1", owned)
	tab.Object(other)
	if unsafe.SliceData(raw(other)) == unsafe.SliceData(raw(v1)) {
		t.Error("a set naming a uid was shared through the table")
	}
	v2 := lease("2", owned)
	tab.ObjectLike(v2, v1)
	if unsafe.SliceData(raw(v2)) != unsafe.SliceData(raw(v1)) {
		t.Error("a set naming a uid was not taken from the previous version")
	}
	a, b := lease("1", plain), lease("1", plain)
	tab.Object(a)
	tab.Object(b)
	if unsafe.SliceData(raw(a)) != unsafe.SliceData(raw(b)) {
		t.Error("a set naming no uid was not shared through the table")
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

// TestObjectLikeTakesEqualStringsFromLike checks ObjectLike's shortcut: a
// string equal to the one at the same place in like becomes like's (even
// where like's is not the table's copy, which shows no lookup was made),
// one that differs is interned through the table, and the object keeps its
// value throughout.
func TestObjectLikeTakesEqualStringsFromLike(t *testing.T) {
	tab := New()
	other := node(t, "node-b", "1")
	tab.Object(other)
	like := node(t, "node-a", "1") // not interned: its strings are its own
	next := node(t, "node-a", "2")
	next.Status.Conditions[0].Message = "kubelet is posting ready status" + ""
	next.Status.Conditions = append(next.Status.Conditions, *other.Status.Conditions[0].DeepCopy())
	next.Status.Conditions[1].Type = corev1.NodeMemoryPressure
	next.ManagedFields[0].Manager = "someone-else"
	want := next.DeepCopy()

	tab.ObjectLike(next, like)
	if !apiequality.Semantic.DeepEqual(want, next) {
		t.Fatalf("ObjectLike changed the object's value")
	}
	for name, pair := range map[string][2]string{
		"name":      {next.Name, like.Name},
		"uid":       {string(next.UID), string(like.UID)},
		"reason":    {next.Status.Conditions[0].Reason, like.Status.Conditions[0].Reason},
		"operation": {string(next.ManagedFields[0].Operation), string(like.ManagedFields[0].Operation)},
	} {
		if !sameData(pair[0], pair[1]) {
			t.Errorf("%s: equal to like's but not taken from it", name)
		}
	}
	if unsafe.SliceData(next.ManagedFields[0].FieldsV1.GetRawBytes()) != unsafe.SliceData(like.ManagedFields[0].FieldsV1.GetRawBytes()) {
		t.Error("managedFields bytes not taken from like")
	}
	if got := next.ManagedFields[0].FieldsV1.GetRawBytes(); cap(got) != len(got) {
		t.Errorf("taken bytes have capacity %d past their length %d: an append would write into like", cap(got), len(got))
	}
	// Where like has nothing (a second condition) or differs (the manager),
	// the table's copies are used, shared with other objects.
	if !sameData(string(next.Status.Conditions[1].Type), string(tab.String(string(corev1.NodeMemoryPressure)))) ||
		!sameData(next.Status.Conditions[1].Reason, other.Status.Conditions[0].Reason) {
		t.Error("a value without a counterpart in like was not interned through the table")
	}
	if sameData(next.ManagedFields[0].Manager, like.ManagedFields[0].Manager) ||
		!sameData(next.ManagedFields[0].Manager, tab.String("someone-else")) {
		t.Error("a value that differs from like's was not interned through the table")
	}
	if sameData(next.ResourceVersion, like.ResourceVersion) {
		t.Error("resourceVersion was shared")
	}
}

func TestObjectLikeWithoutAUsableLikeIsObject(t *testing.T) {
	for name, like := range map[string]any{"nil": nil, "nil pointer": (*corev1.Node)(nil), "other type": &coordinationv1.Lease{}} {
		t.Run(name, func(t *testing.T) {
			tab := New()
			first := node(t, "node-a", "1")
			tab.Object(first)
			n := node(t, "node-a", "2")
			tab.ObjectLike(n, like)
			if !sameData(n.Name, first.Name) || !sameData(n.Status.Conditions[0].Message, first.Status.Conditions[0].Message) {
				t.Error("not interned through the table")
			}
		})
	}
}

// BenchmarkObjectLikeNode is BenchmarkObjectNode for the watch cache's
// common case: a new version of a node whose previous version is cached.
func BenchmarkObjectLikeNode(b *testing.B) {
	tab := New()
	prev := make([]*corev1.Node, 1024)
	next := make([]*corev1.Node, len(prev))
	for i := range prev {
		prev[i] = node(b, fmt.Sprintf("node-%04d", i), "1")
		tab.Object(prev[i])
		next[i] = node(b, fmt.Sprintf("node-%04d", i), "2")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		tab.ObjectLike(next[i%len(next)], prev[i%len(prev)])
	}
}

// BenchmarkLeaseVersion interns a new version of one of 100,000 node leases
// (the watch cache's load in a 100k fleet), through the table alone and
// taking from the cached version: with this many strings the table's
// lookups miss the CPU caches.
func BenchmarkLeaseVersion(b *testing.B) {
	const n = 100_000
	lease := func(i int, rv string) *coordinationv1.Lease {
		name := fmt.Sprintf("node-%06d", i)
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: "kube-node-lease", UID: types.UID(fmt.Sprintf("%08d-uid", i)), ResourceVersion: rv,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: types.UID(fmt.Sprintf("%08d-node", i))}},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate,
					APIVersion: "coordination.k8s.io/v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:holderIdentity":{},"f:renewTime":{}}}`)}},
			},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &name},
		}
		out := &coordinationv1.Lease{}
		viaProtobuf(b, l, out)
		return out
	}
	tab := New()
	cached := make([]*coordinationv1.Lease, n)
	next := make([]*coordinationv1.Lease, n)
	for i := range cached {
		cached[i] = lease(i, "1")
		tab.Object(cached[i])
	}
	for _, like := range []bool{false, true} {
		b.Run(fmt.Sprintf("like=%v", like), func(b *testing.B) {
			for i := range next {
				next[i] = lease(i, "2")
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				// Every version is interned once, as the cache does.
				if i > 0 && i%n == 0 {
					b.StopTimer()
					for j := range next {
						next[j] = lease(j, "2")
					}
					b.StartTimer()
				}
				if like {
					tab.ObjectLike(next[i%n], cached[i%n])
				} else {
					tab.Object(next[i%n])
				}
			}
		})
	}
}

// shapes holds every kind of place a walk reaches, a recursive type
// included, so that each plan is exercised on values whose addresses differ
// from the struct's start.
type named string

type shapes struct {
	n        int64
	Name     string
	hidden   string
	Arr      [2]string
	Ptrs     []*string
	Kids     []*shapes
	ByKey    map[string]shapes
	Raw      []byte
	Named    named
	UID      types.UID
	Flag     *bool
	Empty    [0]string
	Optional *shapes
}

func TestWalkReachesEveryShape(t *testing.T) {
	fresh := func(s string) string { return string([]byte(s)) } // a copy of its own
	build := func() *shapes {
		a, b := fresh("ptr-a"), fresh("ptr-b")
		return &shapes{
			n: 1, Name: fresh("top"), hidden: fresh("hidden"), Arr: [2]string{fresh("arr-0"), fresh("arr-1")},
			Ptrs:  []*string{&a, nil, &b},
			Kids:  []*shapes{{Name: fresh("kid"), Kids: []*shapes{{Name: fresh("grandkid")}}}, nil},
			ByKey: map[string]shapes{fresh("key"): {Name: fresh("in-map"), Arr: [2]string{fresh("x"), ""}}},
			Raw:   []byte(fresh("raw-bytes")), Named: named(fresh("named")), UID: types.UID(fresh("uid")),
			Flag: new(true), Optional: &shapes{Name: fresh("optional")},
		}
	}
	tab := New()
	first, second := build(), build()
	want := build()
	tab.Object(first)
	tab.Object(second)
	if !reflect.DeepEqual(first, want) || !reflect.DeepEqual(second, want) {
		t.Fatal("interning changed a value")
	}
	for name, pair := range map[string][2]string{
		"field":            {first.Name, second.Name},
		"array element":    {first.Arr[1], second.Arr[1]},
		"through pointer":  {*first.Ptrs[2], *second.Ptrs[2]},
		"recursive":        {first.Kids[0].Kids[0].Name, second.Kids[0].Kids[0].Name},
		"map value":        {first.ByKey["key"].Name, second.ByKey["key"].Name},
		"map value array":  {first.ByKey["key"].Arr[0], second.ByKey["key"].Arr[0]},
		"named string":     {string(first.Named), string(second.Named)},
		"optional pointer": {first.Optional.Name, second.Optional.Name},
	} {
		if !sameData(pair[0], pair[1]) {
			t.Errorf("%s: not shared", name)
		}
	}
	if unsafe.SliceData(first.Raw) != unsafe.SliceData(second.Raw) || cap(first.Raw) != len(first.Raw) {
		t.Error("bytes not shared, or shared with room to append into")
	}
	if sameData(first.hidden, second.hidden) {
		t.Error("an unexported field was interned")
	}
	if sameData(string(first.UID), string(second.UID)) {
		t.Error("a uid went through the table")
	}
	if first.Flag != second.Flag || !*first.Flag {
		t.Error("a *bool is not the canonical one")
	}
	// Taken from like where like has the same place, and only there.
	third, like := build(), build()
	like.Kids = like.Kids[:1]
	like.Kids[0].Kids = nil
	tab.ObjectLike(third, like)
	if !sameData(third.Arr[0], like.Arr[0]) || !sameData(*third.Ptrs[0], *like.Ptrs[0]) || !sameData(third.Kids[0].Name, like.Kids[0].Name) || !sameData(string(third.UID), string(like.UID)) {
		t.Error("equal values not taken from like")
	}
	if !sameData(third.Kids[0].Kids[0].Name, first.Kids[0].Kids[0].Name) {
		t.Error("a value like lacks was not interned through the table")
	}
}

// lease is a kubelet's node lease decoded from protobuf, so that every
// pointer and slice in it is its own allocation, as in a request body.
func lease(t testing.TB, name, rv string, renew time.Time) *coordinationv1.Lease {
	t.Helper()
	acquired := metav1.NewMicroTime(time.Date(2026, 11, 25, 4, 0, 0, 0, time.UTC))
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "kube-node-lease", UID: types.UID("uid-" + name), ResourceVersion: rv,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: types.UID("node-" + name)}},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: &name, LeaseDurationSeconds: new(int32(40)), AcquireTime: &acquired,
			RenewTime: &metav1.MicroTime{Time: renew}, LeaseTransitions: new(int32(0)),
		},
	}
	out := &coordinationv1.Lease{}
	viaProtobuf(t, l, out)
	return out
}

func TestObjectLikeTakesEqualPointersAndSlicesFromLike(t *testing.T) {
	tab := New()
	start := time.Date(2026, 11, 25, 5, 0, 0, 0, time.UTC)
	like := lease(t, "node-a", "1", start)
	tab.Object(like)
	next := lease(t, "node-a", "2", start.Add(10*time.Second))
	*next.Spec.LeaseTransitions = 1
	want := next.DeepCopy()

	tab.ObjectLike(next, like)
	if !apiequality.Semantic.DeepEqual(want, next) {
		t.Fatalf("ObjectLike changed the object's value:\n%v\nwant\n%v", next, want)
	}
	if next.Spec.HolderIdentity != like.Spec.HolderIdentity || next.Spec.LeaseDurationSeconds != like.Spec.LeaseDurationSeconds ||
		next.Spec.AcquireTime != like.Spec.AcquireTime {
		t.Error("a pointer to a value equal to like's was not taken from like")
	}
	if next.Spec.RenewTime == like.Spec.RenewTime || next.Spec.LeaseTransitions == like.Spec.LeaseTransitions {
		t.Error("a pointer to a value that differs from like's was taken from like")
	}
	refs := next.OwnerReferences
	if unsafe.SliceData(refs) != unsafe.SliceData(like.OwnerReferences) {
		t.Error("owner references equal to like's were not taken from like")
	}
	if cap(refs) != len(refs) {
		t.Errorf("taken slice has capacity %d past its length %d: an append would write into like", cap(refs), len(refs))
	}

	// A slice that differs in one element keeps its own memory, with the
	// equal strings inside it still shared.
	other := lease(t, "node-a", "3", start)
	other.OwnerReferences[0].Kind = "Other"
	tab.ObjectLike(other, like)
	if unsafe.SliceData(other.OwnerReferences) == unsafe.SliceData(like.OwnerReferences) {
		t.Error("owner references that differ from like's were taken from like")
	}
	if !sameData(other.OwnerReferences[0].Name, like.OwnerReferences[0].Name) {
		t.Error("an equal string inside a slice that differs was not taken from like")
	}
	if other.Spec.RenewTime != like.Spec.RenewTime {
		t.Error("an equal renew time was not taken from like")
	}
}

// An object that shares memory with like (a renewal recognized on the wire
// is the cached lease with a new renewTime) leaves that memory alone: like
// was interned by its own walk, and other goroutines read it. Here like is
// deliberately not interned, so a walk into the shared map would replace
// its strings with the table's; in the shared slices and pointers a walk
// would write each string over itself, which only the race detector sees
// (go test -race, with TestProtobufRenewalIsTakenFromTheCache in
// internal/apiserver).
func TestObjectLikeLeavesLikesOwnMemoryAlone(t *testing.T) {
	tab := New()
	start := time.Date(2026, 11, 25, 5, 0, 0, 0, time.UTC)
	tab.Object(lease(t, "node-a", "1", start)) // the table's own copies of the strings
	like := lease(t, "node-a", "1", start)
	like.Labels = map[string]string{strings.Clone("kubernetes.io/hostname"): strings.Clone("node-a")}
	like.Finalizers = []string{strings.Clone("node-a")}
	obj := *like // a copy of the top-level struct, sharing the rest
	obj.Spec.RenewTime = &metav1.MicroTime{Time: start.Add(10 * time.Second)}

	key, val := "", ""
	for k, v := range like.Labels {
		key, val = k, v
	}
	holder, fin, ref := *like.Spec.HolderIdentity, like.Finalizers[0], like.OwnerReferences[0].Name
	tab.ObjectLike(&obj, like)
	for k, v := range like.Labels {
		if !sameData(k, key) || !sameData(v, val) {
			t.Error("ObjectLike wrote into like's labels map")
		}
	}
	if !sameData(like.Finalizers[0], fin) || !sameData(like.OwnerReferences[0].Name, ref) {
		t.Error("ObjectLike wrote into like's slices")
	}
	if !sameData(*like.Spec.HolderIdentity, holder) {
		t.Error("ObjectLike wrote through like's pointer")
	}
	if !sameData(obj.Name, like.Name) {
		t.Error("obj's own strings were not taken from like")
	}
}
