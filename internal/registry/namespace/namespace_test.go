package namespace

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCreateAddsTheKubernetesFinalizerOnce(t *testing.T) {
	res := Resource(time.Now)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	res.PrepareForCreate(ns)
	if ns.Status.Phase != corev1.NamespaceActive || len(ns.Spec.Finalizers) != 1 || ns.Spec.Finalizers[0] != corev1.FinalizerKubernetes {
		t.Fatalf("created namespace %+v %+v, want Active with [kubernetes]", ns.Status, ns.Spec)
	}
	if ns.Labels[corev1.LabelMetadataName] != "x" {
		t.Fatalf("labels %v, want the name label", ns.Labels)
	}
	again := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "y"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"example.com/f", corev1.FinalizerKubernetes}}}
	res.PrepareForCreate(again)
	if len(again.Spec.Finalizers) != 2 {
		t.Fatalf("finalizers %v, want the two given", again.Spec.Finalizers)
	}
}

func TestOnlyFinalizeChangesSpecFinalizers(t *testing.T) {
	res := Resource(time.Now)
	old := &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "x"},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
	}
	for _, tc := range []struct {
		sub            string
		wantFinalizers int
		wantPhase      corev1.NamespacePhase
	}{
		{"", 1, corev1.NamespaceTerminating},
		{"status", 1, corev1.NamespaceActive},
		{"finalize", 0, corev1.NamespaceTerminating},
	} {
		obj := old.DeepCopy()
		obj.Spec.Finalizers = nil
		obj.Status.Phase = corev1.NamespaceActive
		res.PrepareForUpdate(obj, old, tc.sub)
		if len(obj.Spec.Finalizers) != tc.wantFinalizers || obj.Status.Phase != tc.wantPhase {
			t.Errorf("update of %q: finalizers %v phase %s, want %d finalizers and %s", tc.sub, obj.Spec.Finalizers, obj.Status.Phase, tc.wantFinalizers, tc.wantPhase)
		}
	}
}

func TestDeleteMarksTerminatingThenWaitsForFinalizers(t *testing.T) {
	res := Resource(time.Now)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x"}}
	res.PrepareForCreate(ns)

	keep, err := res.PrepareForDelete(ns)
	if err != nil || !keep || ns.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("first delete: keep=%v err=%v phase %s; want kept, Terminating", keep, err, ns.Status.Phase)
	}
	now := metav1.Now()
	ns.DeletionTimestamp = &now
	_, err = res.PrepareForDelete(ns)
	if !apierrors.IsConflict(err) {
		t.Fatalf("delete with finalizers left: %v, want a conflict", err)
	}
	const want = `Operation cannot be fulfilled on namespaces "x": The system is ensuring all content is removed from this namespace.  Upon completion, this namespace will automatically be purged by the system.`
	if err.Error() != want {
		t.Fatalf("message %q, want %q", err.Error(), want)
	}
	if res.FinalizersDone(ns) {
		t.Fatal("FinalizersDone with the kubernetes finalizer left")
	}
	ns.Spec.Finalizers = nil
	if keep, err := res.PrepareForDelete(ns); keep || err != nil {
		t.Fatalf("delete once finalized: keep=%v err=%v, want the generic delete", keep, err)
	}
	if !res.FinalizersDone(ns) {
		t.Fatal("FinalizersDone false with no finalizer")
	}
}

func TestFinalizerNamesAreValidated(t *testing.T) {
	res := Resource(time.Now)
	for name, valid := range map[corev1.FinalizerName]bool{
		corev1.FinalizerKubernetes: true, "example.com/cleanup": true, "orphan": true,
		"cleanup": false, "bad name/x": false,
	} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{name}}}
		if errs := res.ValidateCreate(ns); (len(errs) == 0) != valid {
			t.Errorf("finalizer %q: errors %v, want valid=%v", name, errs, valid)
		}
	}
}
