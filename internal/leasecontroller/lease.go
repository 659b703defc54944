package leasecontroller

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// buildLease returns the lease to write for a renewal at now: a deep copy of
// base (the last object the server returned, so its resourceVersion and uid
// act as preconditions), or a fresh lease when base is nil. Holder and
// duration are re-asserted on every renewal, as newer component-helpers
// versions do: an edited lease converges back, and a process that restarted
// with a new holder identity (kube-apiserver's per-start uuid) takes over the
// existing object under its own name.
func buildLease(base *coordinationv1.Lease, namespace, name, holder string, durationSeconds int32, now time.Time) *coordinationv1.Lease {
	var lease *coordinationv1.Lease
	if base == nil {
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	} else {
		lease = base.DeepCopy()
	}
	lease.Spec.HolderIdentity = &holder
	lease.Spec.LeaseDurationSeconds = &durationSeconds
	renew := metav1.NewMicroTime(now)
	lease.Spec.RenewTime = &renew
	return lease
}
