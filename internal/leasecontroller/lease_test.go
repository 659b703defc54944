package leasecontroller

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestBuildFreshLease(t *testing.T) {
	now := time.Date(2024, 4, 5, 4, 19, 33, 283190123, time.UTC)
	l := buildLease(nil, "kube-node-lease", "node-a", "node-a", 40, now)
	if l.Name != "node-a" || l.Namespace != "kube-node-lease" {
		t.Fatalf("lease is %s/%s, want kube-node-lease/node-a", l.Namespace, l.Name)
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "node-a" {
		t.Fatalf("holder = %v, want node-a", l.Spec.HolderIdentity)
	}
	if l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds != 40 {
		t.Fatalf("duration = %v, want 40", l.Spec.LeaseDurationSeconds)
	}
	if l.Spec.RenewTime == nil || !l.Spec.RenewTime.Time.Equal(now) {
		t.Fatalf("renewTime = %v, want %v", l.Spec.RenewTime, now)
	}
	// The bare minimum: no acquireTime, no transitions, no resourceVersion
	// or uid (a create), no owner or labels (Prepare's business).
	if l.Spec.AcquireTime != nil || l.Spec.LeaseTransitions != nil {
		t.Fatalf("fresh lease sets acquireTime/leaseTransitions: %+v", l.Spec)
	}
	if l.ResourceVersion != "" || l.UID != "" || len(l.OwnerReferences) != 0 || len(l.Labels) != 0 {
		t.Fatalf("fresh lease carries metadata it must not: %+v", l.ObjectMeta)
	}
}

func TestBuildLeaseFromBase(t *testing.T) {
	wrongDuration := int32(15)
	oldHolder := "apiserver-x_1111"
	oldRenew := metav1.NewMicroTime(time.Unix(100, 0))
	base := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: "apiserver-x", Namespace: "kube-system",
			ResourceVersion: "289254", UID: "46429704-b2c8-48c9-9d13-c0096dc54fdd",
			Labels: map[string]string{"apiserver.kubernetes.io/identity": "kube-apiserver"},
		},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &oldHolder, LeaseDurationSeconds: &wrongDuration, RenewTime: &oldRenew},
	}
	now := time.Unix(200, 0)
	l := buildLease(base, "kube-system", "apiserver-x", "apiserver-x_2222", 3600, now)
	// resourceVersion and uid ride along: they are the preconditions that
	// make a stale or deleted lease answer 409 rather than be overwritten.
	if l.ResourceVersion != "289254" || l.UID != base.UID {
		t.Fatalf("renewal lost preconditions: rv=%q uid=%q", l.ResourceVersion, l.UID)
	}
	if l.Labels["apiserver.kubernetes.io/identity"] != "kube-apiserver" {
		t.Fatalf("renewal dropped the base's labels: %v", l.Labels)
	}
	if *l.Spec.HolderIdentity != "apiserver-x_2222" {
		t.Fatalf("holder = %q, want the new process's identity re-asserted", *l.Spec.HolderIdentity)
	}
	if *l.Spec.LeaseDurationSeconds != 3600 {
		t.Fatalf("duration = %d, want re-asserted 3600", *l.Spec.LeaseDurationSeconds)
	}
	if !l.Spec.RenewTime.Time.Equal(now) {
		t.Fatalf("renewTime = %v, want %v", l.Spec.RenewTime, now)
	}
	// The base is the cache of what the server holds; it must not change.
	if *base.Spec.LeaseDurationSeconds != 15 || *base.Spec.HolderIdentity != oldHolder || !base.Spec.RenewTime.Equal(&oldRenew) {
		t.Fatalf("buildLease mutated its base: %+v", base.Spec)
	}
}
