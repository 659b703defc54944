package dashboard

import (
	"bufio"
	"bytes"
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// mediaType is the serializer a server writes watch streams with.
func mediaType(t *testing.T, mt string) runtime.SerializerInfo {
	t.Helper()
	for _, info := range scheme.Codecs.SupportedMediaTypes() {
		if info.MediaType == mt {
			return info
		}
	}
	t.Fatalf("no serializer for %s", mt)
	return runtime.SerializerInfo{}
}

// watchStream encodes events as a server writes a watch stream in mt:
// each object with the media type's serializer, wrapped in a WatchEvent
// written with its stream serializer and framer.
func watchStream(t *testing.T, mt string, events ...watch.Event) []byte {
	t.Helper()
	info := mediaType(t, mt)
	var out bytes.Buffer
	for _, e := range events {
		var obj bytes.Buffer
		if err := info.Serializer.Encode(e.Object, &obj); err != nil {
			t.Fatal(err)
		}
		ev := &metav1.WatchEvent{Type: string(e.Type), Object: runtime.RawExtension{Raw: obj.Bytes()}}
		if err := info.StreamSerializer.Encode(ev, info.StreamSerializer.Framer.NewFrameWriter(&out)); err != nil {
			t.Fatal(err)
		}
	}
	return out.Bytes()
}

const protobufType = "application/vnd.kubernetes.protobuf"

// testLeases are leases with every field a leaseRecord reads set, unset,
// or set in an unusual way, and fields it does not read.
func testLeases() []*coordinationv1.Lease {
	at := time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC)
	full := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "ctrl", ResourceVersion: "17",
			Labels: map[string]string{identityLabel: "x", "a": ""}, Annotations: map[string]string{"big": "annotation"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "u1"}, {Kind: "Pod", Name: "second"}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}},
			Finalizers:      []string{"f"}, UID: "uid", CreationTimestamp: metav1.NewTime(at)},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("holder-1"), LeaseDurationSeconds: ptr.To[int32](15),
			AcquireTime: &metav1.MicroTime{Time: at.Add(-time.Hour)}, RenewTime: &metav1.MicroTime{Time: at},
			LeaseTransitions: ptr.To[int32](7), Strategy: ptr.To(coordinationv1.OldestEmulationVersion), PreferredHolder: ptr.To("holder-2")},
	}
	empty := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: NodeLeaseNamespace, Name: "bare", ResourceVersion: "18"}}
	zeros := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: NodeLeaseNamespace, Name: "zeros", ResourceVersion: "19"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(""), LeaseDurationSeconds: ptr.To[int32](0), LeaseTransitions: ptr.To[int32](-3),
			RenewTime: &metav1.MicroTime{}, AcquireTime: &metav1.MicroTime{Time: time.Unix(0, 999)}}}
	node := lease(NodeLeaseNamespace, "node-1", "node-1", at, 40, 0)
	node.ResourceVersion = "20"
	for _, l := range []*coordinationv1.Lease{full, empty, zeros, node} {
		l.TypeMeta = metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"}
	}
	return []*coordinationv1.Lease{full, empty, zeros, node}
}

// TestLeanLeaseMatchesFullDecode decodes watch frames as a server writes
// them both ways: the lean decoder must give the record newLeaseRecord
// makes of the Lease client-go decodes, and the Lease's resourceVersion.
func TestLeanLeaseMatchesFullDecode(t *testing.T) {
	info := mediaType(t, protobufType)
	for _, l := range testLeases() {
		stream := watchStream(t, protobufType, watch.Event{Type: watch.Modified, Object: l})
		frame := stream[4:]
		typ, obj, err := watchFrame(frame)
		if err != nil || typ != string(watch.Modified) {
			t.Fatalf("%s: watch frame type %q, error %v", l.Name, typ, err)
		}
		var got leaseRecord
		rv, err := leanLease(obj, &got)
		if err != nil {
			t.Fatalf("%s: %v", l.Name, err)
		}
		full, _, err := info.Serializer.Decode(obj, nil, nil)
		if err != nil {
			t.Fatalf("%s: client-go decoding: %v", l.Name, err)
		}
		want := newLeaseRecord(full.(*coordinationv1.Lease))
		if !reflect.DeepEqual(got, *want) || string(rv) != l.ResourceVersion {
			t.Errorf("%s: lean decode\n%+v rv %s, want\n%+v rv %s", l.Name, got, rv, *want, l.ResourceVersion)
		}
	}
}

// TestWatchReaderAppliesTheStream feeds a watch stream, in protobuf and
// in JSON, to a Fleet: additions, a renewal, a bookmark and a deletion
// are applied and the resourceVersion follows; an ERROR event (410) ends
// the watch with the Status's error.
func TestWatchReaderAppliesTheStream(t *testing.T) {
	for _, mt := range []string{protobufType, "application/json"} {
		t.Run(mt, func(t *testing.T) {
			leases := testLeases()
			renewed := leases[3].DeepCopy()
			renewed.ResourceVersion, renewed.Spec.RenewTime = "21", &metav1.MicroTime{Time: renewed.Spec.RenewTime.Add(10 * time.Second)}
			deleted := leases[1].DeepCopy()
			deleted.ResourceVersion = "22"
			bookmark := &coordinationv1.Lease{TypeMeta: leases[0].TypeMeta, ObjectMeta: metav1.ObjectMeta{ResourceVersion: "30"}}
			gone := apierrors.NewResourceExpired("too old resource version: 1 (30)").Status()
			gone.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
			var events []watch.Event
			for _, l := range leases {
				events = append(events, watch.Event{Type: watch.Added, Object: l})
			}
			events = append(events, watch.Event{Type: watch.Modified, Object: renewed},
				watch.Event{Type: watch.Deleted, Object: deleted}, watch.Event{Type: watch.Bookmark, Object: bookmark})

			clk := clocktesting.NewFakeClock(t0)
			f := NewFleet(clk)
			stream := watchStream(t, mt, events...)
			w := &watchReader{br: bufio.NewReader(bytes.NewReader(stream)), fleet: f, rv: "1"}
			if err, ok := w.run().(streamEnd); !ok {
				t.Fatalf("the stream's end: %v, want a streamEnd", err)
			}
			if w.rv != "30" || w.events != 6 {
				t.Errorf("after the stream: version %q and %d events, want 30 and 6", w.rv, w.events)
			}
			if len(f.leases) != 3 || f.leases[leaseKey{NodeLeaseNamespace, "bare"}] != nil {
				t.Errorf("leases %v, want all but the deleted one", f.leases)
			}
			if r := f.leases[leaseKey{NodeLeaseNamespace, "node-1"}]; r == nil || !r.renew.Equal(renewed.Spec.RenewTime.Truncate(time.Microsecond)) {
				t.Errorf("node-1 is %+v, want renewed at %v", r, renewed.Spec.RenewTime)
			}

			stream = watchStream(t, mt, watch.Event{Type: watch.Modified, Object: leases[0]}, watch.Event{Type: watch.Error, Object: &gone})
			w = &watchReader{br: bufio.NewReader(bytes.NewReader(stream)), fleet: f, rv: "30"}
			if err := w.run(); !apierrors.IsResourceExpired(err) {
				t.Errorf("an ERROR event with a 410 Status ended the watch with %v, want its error", err)
			}
			if w.rv != "17" {
				t.Errorf("after the ERROR event: version %q, want the event before it's (17)", w.rv)
			}
		})
	}
}

// TestLeanLeaseRejectsWhatIsNotALease: a frame that is not a protobuf
// object is an error, not an empty lease.
func TestLeanLeaseRejectsWhatIsNotALease(t *testing.T) {
	var r leaseRecord
	if _, err := leanLease([]byte(`{"kind":"Lease"}`), &r); err == nil {
		t.Error("JSON decoded as a protobuf Lease")
	}
	stream := watchStream(t, protobufType, watch.Event{Type: watch.Added, Object: testLeases()[0]})
	if _, err := leanLease(stream[4:len(stream)-3], &r); err == nil {
		t.Error("a truncated frame decoded")
	}
}

// TestListReplacesTheLeases: a list (after the watch's version was lost)
// adds and updates what it holds and forgets every other lease, as an
// informer's relist does.
func TestListReplacesTheLeases(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	f := NewFleet(clk)
	f.SetLease(lease(NodeLeaseNamespace, "a", "a", t0, 40, 0))
	f.SetLease(lease(NodeLeaseNamespace, "b", "b", t0, 40, 0))
	f.Snapshot(t0)
	clk.Step(time.Second)
	f.replaceLeases([]leaseRecord{*newLeaseRecord(lease(NodeLeaseNamespace, "b", "b", clk.Now(), 40, 0)),
		*newLeaseRecord(lease(NodeLeaseNamespace, "c", "c", t0, 40, 0))})
	rows := f.Rows(View{Limit: 10}, clk.Now())
	if rows.Total != 2 || rows.Rows[0].Name != "b" || rows.Rows[0].Renew != clk.Now().UnixMilli() || rows.Rows[1].Name != "c" {
		t.Errorf("after the list: %+v, want b renewed and c", rows)
	}
}
