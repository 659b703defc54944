package agent

import (
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestNeedsOwnerReference(t *testing.T) {
	if !needsOwnerReference(&coordinationv1.Lease{}) {
		t.Fatal("a lease without owner should need an owner reference")
	}
	owned := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-a", UID: "79d2"}},
	}}
	if needsOwnerReference(owned) {
		t.Fatal("a lease with an owner must not need another")
	}
}

func TestNodeOwnerReference(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: types.UID("79d24559-25af-4dd8-8cf8-6b38865926b7")}}
	got := NodeOwnerReference(node)
	want := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "node-a", UID: "79d24559-25af-4dd8-8cf8-6b38865926b7"}
	if got.APIVersion != want.APIVersion || got.Kind != want.Kind || got.Name != want.Name || got.UID != want.UID {
		t.Fatalf("owner ref = %+v, want %+v", got, want)
	}
	if got.Controller != nil || got.BlockOwnerDeletion != nil {
		t.Fatalf("owner ref sets controller/blockOwnerDeletion: %+v", got)
	}
}
