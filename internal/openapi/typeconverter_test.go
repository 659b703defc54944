package openapi

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/leasehold/leasehold/internal/served"
)

func TestTypeConverterRoundTrip(t *testing.T) {
	tc := newTestOpenAPI(t).TypeConverter()
	renew := metav1.NewMicroTime(time.Date(2025, 1, 2, 3, 4, 5, 6000, time.UTC))
	lease := &coordinationv1.Lease{
		TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: "kube-node-lease", Labels: map[string]string{"a": "b"}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("node-1"),
			LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime:            &renew,
		},
	}
	typed, err := tc.ObjectToTyped(lease)
	if err != nil {
		t.Fatalf("ObjectToTyped: %v", err)
	}
	fs, err := typed.ToFieldSet()
	if err != nil {
		t.Fatalf("ToFieldSet: %v", err)
	}
	if s := fs.String(); !strings.Contains(s, ".spec.holderIdentity") || !strings.Contains(s, ".metadata.labels.a") {
		t.Errorf("field set misses fields: %s", s)
	}
	back, err := tc.TypedToObject(typed)
	if err != nil {
		t.Fatalf("TypedToObject: %v", err)
	}
	var got coordinationv1.Lease
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(back.(*unstructured.Unstructured).Object, &got); err != nil {
		t.Fatalf("FromUnstructured: %v", err)
	}
	if *got.Spec.HolderIdentity != "node-1" || *got.Spec.LeaseDurationSeconds != 40 || !got.Spec.RenewTime.Equal(&renew) {
		t.Errorf("round trip changed the spec: %+v", got.Spec)
	}

	// A field the schema does not have is rejected, which is what makes
	// apply strict about typos.
	bad := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
		"metadata": map[string]interface{}{"name": "x"},
		"spec":     map[string]interface{}{"holderIdentiti": "typo"},
	}}
	if _, err := tc.ObjectToTyped(bad); err == nil {
		t.Errorf("ObjectToTyped accepted an unknown field")
	}

	// A kind that is not served has no type.
	pod := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Pod"}}
	if _, err := tc.ObjectToTyped(pod); err == nil || !strings.Contains(err.Error(), "no corresponding type") {
		t.Errorf("ObjectToTyped(Pod) = %v, want no corresponding type", err)
	}
}

// TestApplyCreatesManagedFields runs server-side apply of a Lease on an
// empty object through managedfields, as the apiserver's create-by-apply
// does.
func TestApplyCreatesManagedFields(t *testing.T) {
	o := newTestOpenAPI(t)
	scheme, err := served.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	gvk := coordinationv1.SchemeGroupVersion.WithKind("Lease")
	fm, err := managedfields.NewDefaultFieldManager(o.TypeConverter(), runtime.UnsafeObjectConvertor(scheme), scheme, scheme,
		gvk, gvk.GroupVersion(), "", nil)
	if err != nil {
		t.Fatalf("NewDefaultFieldManager: %v", err)
	}
	const applied = `
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: leader
  namespace: default
spec:
  holderIdentity: alpha
  leaseDurationSeconds: 15
`
	patch := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(applied), &patch.Object); err != nil {
		t.Fatal(err)
	}
	live := &coordinationv1.Lease{}
	live.SetGroupVersionKind(gvk)
	out, err := fm.Apply(live, patch, "kubectl", false)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	lease, ok := out.(*coordinationv1.Lease)
	if !ok {
		t.Fatalf("Apply returned %T", out)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "alpha" {
		t.Errorf("applied spec not in result: %+v", lease.Spec)
	}
	if len(lease.ManagedFields) != 1 {
		t.Fatalf("managedFields = %+v", lease.ManagedFields)
	}
	mf := lease.ManagedFields[0]
	if mf.Manager != "kubectl" || mf.Operation != metav1.ManagedFieldsOperationApply || mf.APIVersion != "coordination.k8s.io/v1" {
		t.Errorf("managedFields entry = %+v", mf)
	}
	if fields := mf.FieldsV1.GetRawString(); !strings.Contains(fields, `"f:holderIdentity"`) || !strings.Contains(fields, `"f:leaseDurationSeconds"`) {
		t.Errorf("fieldsV1 = %s", fields)
	}

	// A second manager changing an applied field conflicts unless forced.
	other := patch.DeepCopy()
	if err := unstructured.SetNestedField(other.Object, "beta", "spec", "holderIdentity"); err != nil {
		t.Fatal(err)
	}
	if _, err := fm.Apply(lease, other, "other", false); err == nil || !strings.Contains(err.Error(), "conflict") {
		t.Errorf("conflicting apply: err = %v, want a conflict", err)
	}
}
