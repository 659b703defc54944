package agent

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeOwnerReference is the reference the kubelet puts on its lease: Node
// by name and uid, without controller or blockOwnerDeletion (a node does not
// control its lease, and blocking owner deletion would need delete rights on
// the Node).
func NodeOwnerReference(node *corev1.Node) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: corev1.SchemeGroupVersion.Version,
		Kind:       "Node",
		Name:       node.Name,
		UID:        node.UID,
	}
}

// needsOwnerReference says whether the lease still lacks an owner. Only a
// lease with no owner at all gets one: an existing reference, even to an
// older Node, is left for the garbage collector to judge.
func needsOwnerReference(lease *coordinationv1.Lease) bool {
	return len(lease.OwnerReferences) == 0
}
