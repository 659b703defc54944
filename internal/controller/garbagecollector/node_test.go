package garbagecollector_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func createNode(t *testing.T, c kubernetes.Interface, name string, owners ...metav1.OwnerReference) *corev1.Node {
	t.Helper()
	n, err := c.CoreV1().Nodes().Create(context.Background(), &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating node %s: %v", name, err)
	}
	return n
}

// The kubelet's node lease: a Lease in kube-node-lease owned by its Node
// (a namespaced dependent of a cluster-scoped owner, as the kubelet writes
// it) is collected when the Node is deleted.
func testNodeLease(t *testing.T, c kubernetes.Interface, ns string) {
	name := ns + "-node"
	node := createNode(t, c, name)
	lease := createLease(t, c, corev1.NamespaceNodeLease, name, nil, metav1.OwnerReference{
		APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
	})
	// A lease of another node stays.
	other := createNode(t, c, name+"-other")
	otherLease := createLease(t, c, corev1.NamespaceNodeLease, other.Name, nil, metav1.OwnerReference{
		APIVersion: "v1", Kind: "Node", Name: other.Name, UID: other.UID,
	})
	if err := c.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting node: %v", err)
	}
	waitLeaseGone(t, c, corev1.NamespaceNodeLease, lease.Name)
	if getLease(t, c, corev1.NamespaceNodeLease, otherLease.Name) == nil {
		t.Fatal("the lease of a live node was deleted")
	}
}

// A cluster-scoped dependent may not have a namespaced owner: the reference
// cannot be resolved, so the Node is never collected, and a Warning event
// in "default" reports it.
func testClusterScopedDependentOfNamespacedOwner(t *testing.T, c kubernetes.Interface, ns string) {
	owner := createLease(t, c, ns, "owner", nil)
	node := createNode(t, c, ns+"-owned-by-lease", leaseRef(owner, false))
	waitWarning(t, c, metav1.NamespaceDefault, node.Name, node.UID)
	deleteLease(t, c, ns, owner.Name, nil)
	time.Sleep(200 * time.Millisecond)
	if _, err := c.CoreV1().Nodes().Get(context.Background(), node.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		t.Fatal("a node with an unresolvable owner reference was collected")
	} else if err != nil {
		t.Fatalf("getting node: %v", err)
	}
}
