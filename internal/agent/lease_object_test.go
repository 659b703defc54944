package agent

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestBuildFreshLease(t *testing.T) {
	now := time.Date(2024, 4, 5, 4, 19, 33, 283190123, time.UTC)
	l := buildLease(nil, "node-a", 40, now)
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
	// The kubelet writes the bare minimum: no acquireTime, no transitions,
	// no resourceVersion or uid (a create), no owner yet.
	if l.Spec.AcquireTime != nil || l.Spec.LeaseTransitions != nil {
		t.Fatalf("fresh lease sets acquireTime/leaseTransitions: %+v", l.Spec)
	}
	if l.ResourceVersion != "" || l.UID != "" || len(l.OwnerReferences) != 0 {
		t.Fatalf("fresh lease carries metadata it must not: %+v", l.ObjectMeta)
	}
	if !needsOwnerReference(l) {
		t.Fatal("fresh lease should need an owner reference")
	}
}

func TestBuildLeaseFromBase(t *testing.T) {
	wrongDuration := int32(15)
	holder := "node-a"
	oldRenew := metav1.NewMicroTime(time.Unix(100, 0))
	base := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: "node-a", Namespace: "kube-node-lease",
			ResourceVersion: "289254", UID: "46429704-b2c8-48c9-9d13-c0096dc54fdd",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-a", UID: "79d2"}},
		},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &wrongDuration, RenewTime: &oldRenew},
	}
	now := time.Unix(200, 0)
	l := buildLease(base, "node-a", 40, now)
	// resourceVersion and uid ride along: they are the preconditions that
	// make a stale or deleted lease answer 409 rather than be overwritten.
	if l.ResourceVersion != "289254" || l.UID != base.UID {
		t.Fatalf("renewal lost preconditions: rv=%q uid=%q", l.ResourceVersion, l.UID)
	}
	if *l.Spec.LeaseDurationSeconds != 40 {
		t.Fatalf("duration = %d, want re-asserted 40", *l.Spec.LeaseDurationSeconds)
	}
	if !l.Spec.RenewTime.Time.Equal(now) {
		t.Fatalf("renewTime = %v, want %v", l.Spec.RenewTime, now)
	}
	if needsOwnerReference(l) {
		t.Fatal("a lease with an owner must not need another")
	}
	// The base is the cache of what the server holds; it must not change.
	if *base.Spec.LeaseDurationSeconds != 15 || !base.Spec.RenewTime.Equal(&oldRenew) {
		t.Fatalf("buildLease mutated its base: %+v", base.Spec)
	}
}

func TestNodeOwnerReference(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: types.UID("79d24559-25af-4dd8-8cf8-6b38865926b7")}}
	got := nodeOwnerReference(node)
	want := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "node-a", UID: "79d24559-25af-4dd8-8cf8-6b38865926b7"}
	if got.APIVersion != want.APIVersion || got.Kind != want.Kind || got.Name != want.Name || got.UID != want.UID {
		t.Fatalf("owner ref = %+v, want %+v", got, want)
	}
	if got.Controller != nil || got.BlockOwnerDeletion != nil {
		t.Fatalf("owner ref sets controller/blockOwnerDeletion: %+v", got)
	}
}
