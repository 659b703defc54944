package objects

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestValidateMetaUpdateMatchesApimachinery(t *testing.T) {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	old := metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "u1", ResourceVersion: "5", CreationTimestamp: now, Generation: 2}
	deleting := *old.DeepCopy()
	deleting.DeletionTimestamp = &now
	deleting.DeletionGracePeriodSeconds = ptr.To[int64](0)
	deleting.Finalizers = []string{"f1"}
	cases := map[string]struct {
		old    metav1.ObjectMeta
		mutate func(*metav1.ObjectMeta)
	}{
		"unchanged":           {old, func(*metav1.ObjectMeta) {}},
		"bad label":           {old, func(m *metav1.ObjectMeta) { m.Labels = map[string]string{"a b": "c"} }},
		"bad annotation":      {old, func(m *metav1.ObjectMeta) { m.Annotations = map[string]string{"/x": "y"} }},
		"generation down":     {old, func(m *metav1.ObjectMeta) { m.Generation = 1 }},
		"negative generation": {old, func(m *metav1.ObjectMeta) { m.Generation = -1 }},
		"no rv":               {old, func(m *metav1.ObjectMeta) { m.ResourceVersion = "" }},
		"owner missing uid": {old, func(m *metav1.ObjectMeta) {
			m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n"}}
		}},
		"bad managed fields": {old, func(m *metav1.ObjectMeta) {
			m.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "x", Operation: "Bogus"}}
		}},
		"name changed":                     {old, func(m *metav1.ObjectMeta) { m.Name = "b" }},
		"uid changed":                      {old, func(m *metav1.ObjectMeta) { m.UID = "u2" }},
		"creation changed":                 {old, func(m *metav1.ObjectMeta) { m.CreationTimestamp = metav1.NewTime(now.Add(time.Hour)) }},
		"new finalizer while deleting":     {deleting, func(m *metav1.ObjectMeta) { m.Finalizers = append(m.Finalizers, "f2") }},
		"finalizer removed while deleting": {deleting, func(m *metav1.ObjectMeta) { m.Finalizers = nil }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n := tc.old.DeepCopy()
			tc.mutate(n)
			got := validateMetaUpdate(n, &tc.old)
			want := metavalidation.ValidateObjectMetaUpdate(n, &tc.old, field.NewPath("metadata"))
			if !equality.Semantic.DeepEqual(got.ToAggregate(), want.ToAggregate()) {
				t.Fatalf("got  %v\nwant %v", got.ToAggregate(), want.ToAggregate())
			}
		})
	}
}

// TestMetaUnchangedOnlyWhenNothingCanFail checks the shortcut's two sides:
// an update that leaves the metadata as stored (a renewal) takes it, and an
// update that changes any field a client may set does not, so whatever
// apimachinery would reject still reaches apimachinery.
func TestMetaUnchangedOnlyWhenNothingCanFail(t *testing.T) {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	fields := metav1.NewFieldsV1(`{"f:spec":{"f:renewTime":{}}}`)
	old := metav1.ObjectMeta{
		Name: "a", Namespace: "ns", UID: "u1", ResourceVersion: "5", CreationTimestamp: now, Generation: 2,
		Labels: map[string]string{"k": "v"}, Annotations: map[string]string{"a": "b"}, Finalizers: []string{"f1"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n", UID: "nu"}},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate,
			APIVersion: "coordination.k8s.io/v1", Time: &now, FieldsType: "FieldsV1", FieldsV1: fields}},
	}
	cases := map[string]struct {
		mutate func(*metav1.ObjectMeta)
		want   bool
	}{
		"unchanged":               {func(*metav1.ObjectMeta) {}, true},
		"managed fields left out": {func(m *metav1.ObjectMeta) { m.ManagedFields = nil }, true},
		"new resourceVersion":     {func(m *metav1.ObjectMeta) { m.ResourceVersion = "9" }, true},
		"same fields, new slice": {func(m *metav1.ObjectMeta) {
			m.ManagedFields[0].FieldsV1 = metav1.NewFieldsV1(fields.GetRawString())
		}, true},
		"bad label":                {func(m *metav1.ObjectMeta) { m.Labels = map[string]string{"a b": "c"} }, false},
		"bad annotation":           {func(m *metav1.ObjectMeta) { m.Annotations = map[string]string{"/x": "y"} }, false},
		"bad finalizer":            {func(m *metav1.ObjectMeta) { m.Finalizers = []string{"not/a/name"} }, false},
		"generation down":          {func(m *metav1.ObjectMeta) { m.Generation = 1 }, false},
		"negative generation":      {func(m *metav1.ObjectMeta) { m.Generation = -1 }, false},
		"generateName":             {func(m *metav1.ObjectMeta) { m.GenerateName = "-" }, false},
		"owner missing uid":        {func(m *metav1.ObjectMeta) { m.OwnerReferences[0].UID = "" }, false},
		"two controllers":          {func(m *metav1.ObjectMeta) { m.OwnerReferences[0].Controller = ptr.To(true) }, false},
		"bad managed operation":    {func(m *metav1.ObjectMeta) { m.ManagedFields[0].Operation = "Bogus" }, false},
		"managed fields edited":    {func(m *metav1.ObjectMeta) { m.ManagedFields[0].FieldsV1 = metav1.NewFieldsV1(`{}`) }, false},
		"managed entry added":      {func(m *metav1.ObjectMeta) { m.ManagedFields = append(m.ManagedFields, m.ManagedFields[0]) }, false},
		"name changed":             {func(m *metav1.ObjectMeta) { m.Name = "b" }, false},
		"namespace changed":        {func(m *metav1.ObjectMeta) { m.Namespace = "other" }, false},
		"uid changed":              {func(m *metav1.ObjectMeta) { m.UID = "u2" }, false},
		"creation changed":         {func(m *metav1.ObjectMeta) { m.CreationTimestamp = metav1.NewTime(now.Add(time.Hour)) }, false},
		"deletion timestamp added": {func(m *metav1.ObjectMeta) { m.DeletionTimestamp = &now }, false},
		"grace period added":       {func(m *metav1.ObjectMeta) { m.DeletionGracePeriodSeconds = ptr.To[int64](0) }, false},
	}
	if errs := append(metavalidation.ValidateObjectMeta(&old, true, metavalidation.NameIsDNSSubdomain, field.NewPath("metadata")),
		metavalidation.ValidateObjectMetaUpdate(&old, &old, field.NewPath("metadata"))...); len(errs) > 0 {
		t.Fatalf("the stored metadata must be valid for the test to mean anything: %v", errs.ToAggregate())
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n := old.DeepCopy()
			tc.mutate(n)
			if got := metaUnchanged(n, &old); got != tc.want {
				t.Fatalf("metaUnchanged = %v, want %v", got, tc.want)
			}
			if !tc.want {
				return
			}
			// A shortcut taken must skip nothing that could have failed.
			errs := metavalidation.ValidateObjectMeta(n, true, metavalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
			errs = append(errs, metavalidation.ValidateObjectMetaUpdate(n, &old, field.NewPath("metadata"))...)
			if len(errs) > 0 {
				t.Fatalf("shortcut taken for metadata apimachinery rejects: %v", errs.ToAggregate())
			}
		})
	}
}
