package apiserver

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
