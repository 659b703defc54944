package objects

import (
	"math/rand/v2"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/internal/openapi"
	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/registry/lease"
	"github.com/leasehold/leasehold/internal/served"
)

// TestRenewalManagedFieldsMatchesFieldManager drives random lease updates
// through both the renewal shortcut and apimachinery's FieldManager, and
// requires identical managedFields whenever the shortcut applies.
func TestRenewalManagedFieldsMatchesFieldManager(t *testing.T) {
	res := lease.Resource(time.Now)
	set := registry.NewSet(res)
	scheme, err := served.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	oa, err := openapi.New(set, "v1.33.0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewStore(Config{Resources: set, Scheme: scheme, TypeConverter: oa.TypeConverter()})
	if err != nil {
		t.Fatal(err)
	}
	fm := s.FieldManager(res, "")
	rng := rand.New(rand.NewPCG(1, 2))

	base := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Namespace: "kube-node-lease", ResourceVersion: "1"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("n"),
			LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime:            &metav1.MicroTime{Time: time.Now()},
		},
	}
	base.SetGroupVersionKind(res.GroupVersionKind())
	empty := res.New()
	empty.GetObjectKind().SetGroupVersionKind(res.GroupVersionKind())
	live := fm.UpdateNoErrors(empty, base.DeepCopy(), "kubelet").(*coordinationv1.Lease)
	if len(live.ManagedFields) != 1 {
		t.Fatalf("create produced managedFields %+v", live.ManagedFields)
	}

	applied := 0
	for i := 0; i < 400; i++ {
		next := live.DeepCopy()
		manager := "kubelet"
		switch rng.IntN(8) {
		case 0, 1, 2:
			next.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(time.Duration(i) * time.Millisecond)}
		case 3:
			next.Spec.HolderIdentity = ptr.To([]string{"a", "b", "n"}[rng.IntN(3)])
		case 4:
			next.Spec.LeaseDurationSeconds = ptr.To(int32(rng.IntN(3) + 39))
		case 5:
			next.Labels = map[string]string{"x": []string{"1", "2"}[rng.IntN(2)]}
		case 6:
			if next.Spec.AcquireTime == nil {
				next.Spec.AcquireTime = &metav1.MicroTime{Time: time.Now()}
			} else {
				next.Spec.AcquireTime = nil
			}
		case 7:
			manager = "someone-else"
			next.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(time.Hour)}
		}
		if rng.IntN(2) == 0 {
			next.ManagedFields = nil // the client may leave them out
		}
		fast := next.DeepCopy()
		usedFast := s.renewalManagedFields(res, "", live, fast, manager)
		full := fm.UpdateNoErrors(live.DeepCopy(), next.DeepCopy(), manager).(*coordinationv1.Lease)
		if usedFast {
			applied++
			if !equalManaged(fast.ManagedFields, full.ManagedFields) {
				t.Fatalf("step %d: shortcut managedFields\n%+v\nFieldManager\n%+v", i, fast.ManagedFields, full.ManagedFields)
			}
		}
		full.ResourceVersion = next.ResourceVersion
		live = full
	}
	if applied < 50 {
		t.Fatalf("shortcut applied only %d times out of 400: the test does not exercise it", applied)
	}
}

// equalManaged compares entries, allowing their timestamps to differ by up
// to two seconds: the shortcut truncates to the second (as the entry is
// serialized) while the FieldManager keeps the nanoseconds until then, and
// the two computations may also straddle a second boundary.
func equalManaged(a, b []metav1.ManagedFieldsEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Manager != y.Manager || x.Operation != y.Operation || x.APIVersion != y.APIVersion || x.Subresource != y.Subresource ||
			x.FieldsV1.GetRawString() != y.FieldsV1.GetRawString() || (x.Time == nil) != (y.Time == nil) {
			return false
		}
		if x.Time != nil {
			d := x.Time.Sub(y.Time.Time)
			if d < -2*time.Second || d > 2*time.Second {
				return false
			}
		}
	}
	return true
}
