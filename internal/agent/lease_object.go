package agent

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// buildLease returns the lease to write for a renewal at now: a deep copy of
// base (the last object the server returned, so its resourceVersion and uid
// act as preconditions), or a fresh lease when base is nil. It writes only the
// fields the kubelet writes: holder, duration and renewTime; never
// acquireTime or leaseTransitions. The duration is re-asserted on every
// renewal so an edited lease converges back to the agent's setting.
func buildLease(base *coordinationv1.Lease, nodeName string, durationSeconds int32, now time.Time) *coordinationv1.Lease {
	var lease *coordinationv1.Lease
	if base == nil {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name:      nodeName,
				Namespace: corev1.NamespaceNodeLease,
			},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: &nodeName,
			},
		}
	} else {
		lease = base.DeepCopy()
	}
	lease.Spec.LeaseDurationSeconds = &durationSeconds
	renew := metav1.NewMicroTime(now)
	lease.Spec.RenewTime = &renew
	return lease
}

// nodeOwnerReference is the reference the kubelet puts on its lease: Node
// by name and uid, without controller or blockOwnerDeletion (a node does not
// control its lease, and blocking owner deletion would need delete rights on
// the Node).
func nodeOwnerReference(node *corev1.Node) metav1.OwnerReference {
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
