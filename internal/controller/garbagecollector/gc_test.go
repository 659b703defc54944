package garbagecollector_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/internal/controller/garbagecollector"
	"github.com/leasehold/leasehold/internal/server/servertest"
	"github.com/leasehold/leasehold/internal/testdeps"
)

// TestGarbageCollector runs every scenario against one real server, each in
// its own namespace.
func TestGarbageCollector(t *testing.T) {
	srv := servertest.Start(t)
	for i, tc := range []struct {
		name string
		run  func(t *testing.T, c kubernetes.Interface, ns string)
	}{
		{"background", testBackground},
		{"owner re-created with a new uid", testRecreatedOwner},
		{"orphan", testOrphan},
		{"foreground", testForeground},
		{"foreground cycle", testForegroundCycle},
		{"one of two owners deleted", testOneOfTwoOwners},
		{"dependent of a missing owner", testMissingOwner},
		{"cross-namespace owner", testCrossNamespaceOwner},
		{"node lease", testNodeLease},
		{"cluster-scoped dependent of a namespaced owner", testClusterScopedDependentOfNamespacedOwner},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := fmt.Sprintf("gc-%d", i)
			createNamespace(t, srv.Client, ns)
			tc.run(t, srv.Client, ns)
		})
	}
}

// Deleting an owner (default Background propagation) deletes its dependent,
// and the dependent's own dependent after it.
func testBackground(t *testing.T, c kubernetes.Interface, ns string) {
	owner := createLease(t, c, ns, "owner", nil)
	dep := createLease(t, c, ns, "dep", nil, leaseRef(owner, false))
	grandchild := createLease(t, c, ns, "grandchild", nil, leaseRef(dep, false))
	unrelated := createLease(t, c, ns, "unrelated", nil)
	deleteLease(t, c, ns, owner.Name, nil)
	waitLeaseGone(t, c, ns, dep.Name)
	waitLeaseGone(t, c, ns, grandchild.Name)
	if getLease(t, c, ns, unrelated.Name) == nil {
		t.Fatal("an object without owners was deleted")
	}
}

// An owner deleted and re-created under the same name has a new uid: the
// dependent pointing at the old uid is collected, one pointing at the new
// uid is kept.
func testRecreatedOwner(t *testing.T, c kubernetes.Interface, ns string) {
	owner := createLease(t, c, ns, "owner", nil)
	old := createLease(t, c, ns, "old-dep", nil, leaseRef(owner, false))
	deleteLease(t, c, ns, owner.Name, nil)
	owner2 := createLease(t, c, ns, "owner", nil)
	if owner2.UID == owner.UID {
		t.Fatal("re-created owner kept its uid")
	}
	current := createLease(t, c, ns, "current-dep", nil, leaseRef(owner2, false))
	waitLeaseGone(t, c, ns, old.Name)
	if getLease(t, c, ns, current.Name) == nil {
		t.Fatal("the dependent of the live owner was deleted")
	}
}

// Orphan propagation: the dependent stays, without the reference, and the
// owner is deleted once that is done.
func testOrphan(t *testing.T, c kubernetes.Interface, ns string) {
	owner := createLease(t, c, ns, "owner", nil)
	other := createLease(t, c, ns, "other-owner", nil)
	dep := createLease(t, c, ns, "dep", nil, leaseRef(owner, true), leaseRef(other, false))
	solo := createLease(t, c, ns, "solo", nil, leaseRef(owner, false))
	deleteLease(t, c, ns, owner.Name, ptr(metav1.DeletePropagationOrphan))
	waitLeaseGone(t, c, ns, owner.Name)
	got := getLease(t, c, ns, dep.Name)
	if got == nil {
		t.Fatal("orphaned dependent was deleted")
	}
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != other.UID {
		t.Errorf("dependent's owners after orphaning = %+v, want only %s", got.OwnerReferences, other.Name)
	}
	gotSolo := getLease(t, c, ns, solo.Name)
	if gotSolo == nil {
		t.Fatal("orphaned dependent with a single owner was deleted")
	}
	if len(gotSolo.OwnerReferences) != 0 {
		t.Errorf("dependent kept its reference to the orphaning owner: %+v", gotSolo.OwnerReferences)
	}
	// Its owner is gone for good, yet it is no longer garbage: it stays.
	time.Sleep(200 * time.Millisecond)
	if getLease(t, c, ns, solo.Name) == nil {
		t.Fatal("orphan was collected after its owner's deletion")
	}
}

// Foreground propagation: dependents are deleted first; the owner stays
// while a dependent with blockOwnerDeletion=true exists (here held by a
// finalizer), not for a non-blocking one.
func testForeground(t *testing.T, c kubernetes.Interface, ns string) {
	const hold = "example.com/hold"
	owner := createLease(t, c, ns, "owner", nil)
	blocking := createLease(t, c, ns, "blocking", []string{hold}, leaseRef(owner, true))
	nonBlocking := createLease(t, c, ns, "non-blocking", []string{hold}, leaseRef(owner, false))
	plain := createLease(t, c, ns, "plain", nil, leaseRef(owner, true))
	deleteLease(t, c, ns, owner.Name, ptr(metav1.DeletePropagationForeground))

	waitLeaseGone(t, c, ns, plain.Name)
	for _, name := range []string{blocking.Name, nonBlocking.Name} {
		testdeps.Eventually(t, waitTimeout, 10*time.Millisecond, name+" marked for deletion", func() (bool, error) {
			l := getLease(t, c, ns, name)
			return l != nil && l.DeletionTimestamp != nil, nil
		})
	}
	// The blocking dependent still exists: the owner must wait.
	time.Sleep(200 * time.Millisecond)
	o := getLease(t, c, ns, owner.Name)
	if o == nil {
		t.Fatal("owner deleted while a blocking dependent exists")
	}
	if o.DeletionTimestamp == nil || len(o.Finalizers) != 1 || o.Finalizers[0] != metav1.FinalizerDeleteDependents {
		t.Fatalf("owner during foreground deletion: deletionTimestamp %v finalizers %v", o.DeletionTimestamp, o.Finalizers)
	}
	dropFinalizers(t, c, ns, blocking.Name)
	waitLeaseGone(t, c, ns, blocking.Name)
	waitLeaseGone(t, c, ns, owner.Name)
	// The non-blocking dependent did not hold the owner back.
	if l := getLease(t, c, ns, nonBlocking.Name); l == nil || l.DeletionTimestamp == nil {
		t.Fatalf("non-blocking dependent: %+v", l)
	}
	dropFinalizers(t, c, ns, nonBlocking.Name)
	waitLeaseGone(t, c, ns, nonBlocking.Name)
}

// With two owners, deleting one removes only that reference.
func testOneOfTwoOwners(t *testing.T, c kubernetes.Interface, ns string) {
	a := createLease(t, c, ns, "owner-a", nil)
	b := createLease(t, c, ns, "owner-b", nil)
	dep := createLease(t, c, ns, "dep", nil, leaseRef(a, false), leaseRef(b, false))
	deleteLease(t, c, ns, a.Name, nil)
	testdeps.Eventually(t, waitTimeout, 10*time.Millisecond, "reference to the deleted owner removed", func() (bool, error) {
		l := getLease(t, c, ns, dep.Name)
		if l == nil {
			t.Fatal("dependent with a live owner was deleted")
		}
		return len(l.OwnerReferences) == 1 && l.OwnerReferences[0].UID == b.UID, nil
	})
	time.Sleep(100 * time.Millisecond)
	if getLease(t, c, ns, dep.Name) == nil {
		t.Fatal("dependent with a live owner was deleted")
	}
}

// A dependent created pointing at an owner that does not exist, or at a
// name that holds an object with another uid, is collected.
func testMissingOwner(t *testing.T, c kubernetes.Interface, ns string) {
	ghost := createLease(t, c, ns, "ghost", nil)
	deleteLease(t, c, ns, ghost.Name, nil)
	missing := createLease(t, c, ns, "missing-owner", nil, leaseRef(ghost, true))
	impostor := createLease(t, c, ns, "impostor", nil)
	wrongUID := leaseRef(impostor, false)
	wrongUID.UID = ghost.UID
	mismatched := createLease(t, c, ns, "uid-mismatch", nil, wrongUID)
	waitLeaseGone(t, c, ns, missing.Name)
	waitLeaseGone(t, c, ns, mismatched.Name)
	if getLease(t, c, ns, impostor.Name) == nil {
		t.Fatal("the object holding the owner's name was deleted")
	}
}

// A namespaced owner is only looked up in the dependent's namespace: a
// reference to a lease elsewhere is dangling (the dependent is collected,
// the owner is untouched) and raises an OwnerRefInvalidNamespace warning.
func testCrossNamespaceOwner(t *testing.T, c kubernetes.Interface, ns string) {
	otherNS := ns + "-other"
	createNamespace(t, c, otherNS)
	owner := createLease(t, c, otherNS, "owner", nil)
	dep := createLease(t, c, ns, "dep", nil, leaseRef(owner, false))
	waitLeaseGone(t, c, ns, dep.Name)
	if getLease(t, c, otherNS, owner.Name) == nil {
		t.Fatal("the owner in the other namespace was deleted")
	}
	if served(t, c, "v1", "events") {
		waitWarning(t, c, ns, dep.Name, dep.UID)
	}
}

// waitWarning waits for the OwnerRefInvalidNamespace event about an object.
func waitWarning(t *testing.T, c kubernetes.Interface, ns, name string, uid types.UID) {
	t.Helper()
	testdeps.Eventually(t, waitTimeout, 10*time.Millisecond, "OwnerRefInvalidNamespace event", func() (bool, error) {
		list, err := c.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.Reason == garbagecollector.ReasonInvalidNamespace && e.Type == corev1.EventTypeWarning &&
				e.InvolvedObject.Name == name && e.InvolvedObject.UID == uid {
				return true, nil
			}
		}
		return false, nil
	})
}

// Two leases that own each other with blockOwnerDeletion: a foreground
// deletion of one must not deadlock (the collector unblocks the cycle) and
// takes both.
func testForegroundCycle(t *testing.T, c kubernetes.Interface, ns string) {
	a := createLease(t, c, ns, "a", nil)
	b := createLease(t, c, ns, "b", nil, leaseRef(a, true))
	a.OwnerReferences = []metav1.OwnerReference{leaseRef(b, true)}
	if _, err := c.CoordinationV1().Leases(ns).Update(context.Background(), a, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("making a owned by b: %v", err)
	}
	deleteLease(t, c, ns, a.Name, ptr(metav1.DeletePropagationForeground))
	waitLeaseGone(t, c, ns, a.Name)
	waitLeaseGone(t, c, ns, b.Name)
}

// A foreground deletion in progress survives a restart: the new collector
// rebuilds the graph from the stored objects and finishes it.
func TestForegroundDeletionAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	srv := servertest.StartIn(t, dir)
	c := srv.Client
	ns := "default"
	owner := createLease(t, c, ns, "owner", nil)
	dep := createLease(t, c, ns, "dep", []string{"example.com/hold"}, leaseRef(owner, true))
	deleteLease(t, c, ns, owner.Name, ptr(metav1.DeletePropagationForeground))
	testdeps.Eventually(t, waitTimeout, 10*time.Millisecond, "dependent marked for deletion", func() (bool, error) {
		l := getLease(t, c, ns, dep.Name)
		return l != nil && l.DeletionTimestamp != nil, nil
	})
	srv.Stop()

	srv = servertest.StartIn(t, dir)
	c = srv.Client
	if getLease(t, c, ns, owner.Name) == nil {
		t.Fatal("owner deleted before its blocking dependent")
	}
	dropFinalizers(t, c, ns, dep.Name)
	waitLeaseGone(t, c, ns, dep.Name)
	waitLeaseGone(t, c, ns, owner.Name)
}
