package objects_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/internal/intern"
	"github.com/leasehold/leasehold/internal/objects"
	"github.com/leasehold/leasehold/internal/served"
	"github.com/leasehold/leasehold/internal/watchcache"
)

const thinKey = "/registry/leases/kube-node-lease/n1"

func thinLease() *coordinationv1.Lease {
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	return &coordinationv1.Lease{
		TypeMeta: metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "kube-node-lease", UID: "u1", ResourceVersion: "7",
			CreationTimestamp: metav1.NewTime(at.Local()),
			Labels:            map[string]string{"a": "b"},
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "node-uid"}},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate,
				APIVersion: "coordination.k8s.io/v1", Time: ptr.To(metav1.NewTime(at)), FieldsType: "FieldsV1",
				FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:renewTime":{}}}`)}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("n1"), LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime: ptr.To(metav1.NewMicroTime(at.Add(123456 * time.Microsecond).Local()))},
	}
}

func thinOptions(t *testing.T) watchcache.Options {
	scheme, err := served.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	return objects.NewForm(scheme, served.Stored(time.Now), intern.New()).CacheOptions(watchcache.Options{})
}

// TestThinKeepsOnlyRenewals pins what a thin lease version may differ in:
// for every field of ObjectMeta and LeaseSpec there is a case, and only
// resourceVersion, renewTime and the managedFields entry's time let the
// older version be thin. A field added to either type fails the test
// until it has its case. Whatever is thin rebuilds to the older version,
// equal in JSON, protobuf and reflect.DeepEqual.
func TestThinKeepsOnlyRenewals(t *testing.T) {
	o := thinOptions(t)
	later := func(t time.Time) time.Time { return t.Add(10 * time.Second) }
	meta := map[string]func(m *metav1.ObjectMeta) bool{ // true: still thin
		"Name":         func(m *metav1.ObjectMeta) bool { m.Name = "n2"; return false },
		"GenerateName": func(m *metav1.ObjectMeta) bool { m.GenerateName = "n-"; return false },
		"Namespace":    func(m *metav1.ObjectMeta) bool { m.Namespace = "other"; return false },
		"SelfLink": func(m *metav1.ObjectMeta) bool {
			//lint:ignore SA1019 the field still exists, and a thin version must keep it
			m.SelfLink = "/x"
			return false
		},
		"UID":             func(m *metav1.ObjectMeta) bool { m.UID = "u2"; return false },
		"ResourceVersion": func(m *metav1.ObjectMeta) bool { m.ResourceVersion = "8"; return true },
		"Generation":      func(m *metav1.ObjectMeta) bool { m.Generation = 2; return false },
		"CreationTimestamp": func(m *metav1.ObjectMeta) bool {
			m.CreationTimestamp.Time = later(m.CreationTimestamp.Time)
			return false
		},
		"DeletionTimestamp":          func(m *metav1.ObjectMeta) bool { m.DeletionTimestamp = ptr.To(metav1.Now()); return false },
		"DeletionGracePeriodSeconds": func(m *metav1.ObjectMeta) bool { m.DeletionGracePeriodSeconds = ptr.To[int64](0); return false },
		"Labels":                     func(m *metav1.ObjectMeta) bool { m.Labels = map[string]string{"a": "c"}; return false },
		"Annotations":                func(m *metav1.ObjectMeta) bool { m.Annotations = map[string]string{"a": "b"}; return false },
		"OwnerReferences":            func(m *metav1.ObjectMeta) bool { m.OwnerReferences[0].UID = "other"; return false },
		"Finalizers":                 func(m *metav1.ObjectMeta) bool { m.Finalizers = []string{"f"}; return false },
		"ManagedFields": func(m *metav1.ObjectMeta) bool {
			m.ManagedFields[0].Time = ptr.To(metav1.NewTime(later(m.ManagedFields[0].Time.Time)))
			return true
		},
	}
	spec := map[string]func(s *coordinationv1.LeaseSpec) bool{
		"HolderIdentity":       func(s *coordinationv1.LeaseSpec) bool { s.HolderIdentity = ptr.To("n2"); return false },
		"LeaseDurationSeconds": func(s *coordinationv1.LeaseSpec) bool { s.LeaseDurationSeconds = ptr.To[int32](41); return false },
		"AcquireTime":          func(s *coordinationv1.LeaseSpec) bool { s.AcquireTime = ptr.To(metav1.NowMicro()); return false },
		"RenewTime": func(s *coordinationv1.LeaseSpec) bool {
			s.RenewTime = ptr.To(metav1.NewMicroTime(later(s.RenewTime.Time)))
			return true
		},
		"LeaseTransitions": func(s *coordinationv1.LeaseSpec) bool { s.LeaseTransitions = ptr.To[int32](1); return false },
		"Strategy": func(s *coordinationv1.LeaseSpec) bool {
			s.Strategy = ptr.To(coordinationv1.OldestEmulationVersion)
			return false
		},
		"PreferredHolder": func(s *coordinationv1.LeaseSpec) bool { s.PreferredHolder = ptr.To("n2"); return false },
	}
	check := func(field string, newer *coordinationv1.Lease, wantThin bool) {
		t.Helper()
		older := thinLease()
		d, thin := o.Thin(thinKey, older, newer)
		if thin != wantThin {
			t.Errorf("%s changed: thin %v, want %v", field, thin, wantThin)
		}
		if !thin {
			return
		}
		rebuilt := o.Thicken(thinKey, newer, d, 7).(*coordinationv1.Lease)
		if !reflect.DeepEqual(rebuilt, older) {
			t.Errorf("%s changed: rebuilt\n%+v\nwant\n%+v", field, rebuilt, older)
		}
		for _, enc := range []func(runtime.Object) ([]byte, error){func(o runtime.Object) ([]byte, error) { return json.Marshal(o) }, func(o runtime.Object) ([]byte, error) {
			return o.(*coordinationv1.Lease).Marshal()
		}} {
			a, err1 := enc(rebuilt)
			b, err2 := enc(older)
			if err1 != nil || err2 != nil || string(a) != string(b) {
				t.Errorf("%s changed: the rebuilt version encodes as %q, the older as %q (%v, %v)", field, a, b, err1, err2)
			}
		}
	}
	eachFieldCase(t, "metadata", meta, func(l *coordinationv1.Lease) *metav1.ObjectMeta { return &l.ObjectMeta }, check)
	eachFieldCase(t, "spec", spec, func(l *coordinationv1.Lease) *coordinationv1.LeaseSpec { return &l.Spec }, check)

	// A renewal moving everything a renewal moves is thin; a second
	// managedFields entry, a time that would not come back exactly, or a
	// renewTime set in one version only keeps the older whole.
	newer := thinLease()
	meta["ResourceVersion"](&newer.ObjectMeta)
	meta["ManagedFields"](&newer.ObjectMeta)
	spec["RenewTime"](&newer.Spec)
	check("a renewal", newer, true)
	two := thinLease()
	two.ManagedFields = append(two.ManagedFields, two.ManagedFields[0])
	two.ManagedFields[1].Manager = "other"
	if _, thin := o.Thin(thinKey, two, two.DeepCopy()); thin {
		t.Error("a lease with two managedFields entries is thin")
	}
	odd := thinLease()
	odd.Spec.RenewTime.Time = odd.Spec.RenewTime.In(time.FixedZone("X", 3600))
	if _, thin := o.Thin(thinKey, odd, thinLease()); thin {
		t.Error("a renewTime in a zone Thicken cannot restore is thin")
	}
	unset := thinLease()
	unset.Spec.RenewTime = nil
	if _, thin := o.Thin(thinKey, unset, thinLease()); thin {
		t.Error("a lease without renewTime is thin")
	}
	if _, thin := o.Thin("/registry/configmaps/ns/c", thinLease(), thinLease()); thin {
		t.Error("a resource without a renewal is thin")
	}
}

// eachFieldCase runs check on a lease changed by the case of every field of
// T (the part of the lease part returns), failing for a field with no case.
func eachFieldCase[T any](t *testing.T, what string, cases map[string]func(*T) bool,
	part func(*coordinationv1.Lease) *T, check func(field string, newer *coordinationv1.Lease, wantThin bool)) {
	t.Helper()
	for _, f := range reflect.VisibleFields(reflect.TypeFor[T]()) {
		change, ok := cases[f.Name]
		if !ok {
			t.Errorf("%s.%s has no case: decide whether a thin version may differ in it", what, f.Name)
			continue
		}
		newer := thinLease()
		check(what+"."+f.Name, newer, change(part(newer)))
	}
}
