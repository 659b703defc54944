package apiserveridentity_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/internal/controller/apiserveridentity"
	"github.com/leasehold/leasehold/internal/server/servertest"
)

// startReplica runs the controller of another replica (hostname host)
// against the server behind c, with fast renewals; the returned stop
// cancels it and waits for Run to return.
func startReplica(t *testing.T, c kubernetes.Interface, host string) (*apiserveridentity.Controller, func()) {
	t.Helper()
	ctrl := apiserveridentity.NewWithLister(serverLister(t, c), c, logger(), nil, apiserveridentity.Config{
		Hostname: host, RenewInterval: 200 * time.Millisecond, GCPeriod: time.Hour,
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := ctrl.Run(ctx); err != nil {
			t.Errorf("replica %s: %v", host, err)
		}
	})
	stop := func() {
		cancel()
		wg.Wait()
	}
	t.Cleanup(stop)
	return ctrl, stop
}

// TestReplicaRenewsAndIsCounted: a second replica publishes its own lease
// next to the server's, renews it, and the label selector counts both; a
// restart of the replica keeps the lease object under a new holder.
func TestReplicaRenewsAndIsCounted(t *testing.T) {
	srv := servertest.Start(t)
	ctrl, stop := startReplica(t, srv.Client, "replica-b")
	name := leaseName(t, "replica-b")
	if ctrl.Lease() != "kube-system/"+name {
		t.Fatalf("Lease() = %q, want kube-system/%s", ctrl.Lease(), name)
	}
	waitFor(t, 10*time.Second, "replica-b's lease", func() bool { return getLease(t, srv.Client, name) != nil })
	first := getLease(t, srv.Client, name)
	if *first.Spec.HolderIdentity != ctrl.HolderIdentity() || first.Labels["kubernetes.io/hostname"] != "replica-b" {
		t.Fatalf("lease holder %q hostname %q, want %q and replica-b", *first.Spec.HolderIdentity, first.Labels["kubernetes.io/hostname"], ctrl.HolderIdentity())
	}
	// Two renewals, each with a later renewTime, by the same holder.
	prev := first
	for range 2 {
		waitFor(t, 5*time.Second, "a renewal", func() bool {
			l := getLease(t, srv.Client, name)
			if l.Spec.RenewTime.After(prev.Spec.RenewTime.Time) {
				prev = l
				return true
			}
			return false
		})
		if *prev.Spec.HolderIdentity != ctrl.HolderIdentity() {
			t.Fatalf("holder changed to %q while the replica ran", *prev.Spec.HolderIdentity)
		}
	}

	waitFor(t, 10*time.Second, "two identity leases (the server's and replica-b's)", func() bool {
		list, err := srv.Client.CoordinationV1().Leases(metav1.NamespaceSystem).List(context.Background(), metav1.ListOptions{LabelSelector: apiserveridentity.Selector})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Items) == 2
	})

	stop()
	again, _ := startReplica(t, srv.Client, "replica-b")
	if again.HolderIdentity() == ctrl.HolderIdentity() {
		t.Fatalf("a restarted replica reuses holder %q, want a new uuid per start", again.HolderIdentity())
	}
	waitFor(t, 10*time.Second, "the restarted replica to take its lease over", func() bool {
		return *getLease(t, srv.Client, name).Spec.HolderIdentity == again.HolderIdentity()
	})
	if l := getLease(t, srv.Client, name); l.UID != first.UID {
		t.Errorf("lease uid %s, was %s: want the same object taken over", l.UID, first.UID)
	}
}

// TestCollectDeletesOnlyExpired: one pass deletes the identity leases whose
// renewTime + duration has passed or that lack either field, and keeps live
// ones (the server's own among them) and leases without the identity label.
func TestCollectDeletesOnlyExpired(t *testing.T) {
	srv := servertest.Start(t)
	ctx := context.Background()
	now := time.Now()
	gone := createIdentityLease(t, srv.Client, "gone-replica", ptr(now.Add(-61*time.Minute)), ptr(int32(3600)))
	neverRenewed := createIdentityLease(t, srv.Client, "never-renewed", nil, ptr(int32(3600)))
	noDuration := createIdentityLease(t, srv.Client, "no-duration", ptr(now), nil)
	quiet := createIdentityLease(t, srv.Client, "quiet-replica", ptr(now.Add(-59*time.Minute)), ptr(int32(3600)))
	// An expired lease without the identity label is someone else's.
	other := createIdentityLease(t, srv.Client, "not-an-identity", ptr(now.Add(-2*time.Hour)), ptr(int32(10)))
	delete(other.Labels, apiserveridentity.IdentityLabel)
	if _, err := srv.Client.CoordinationV1().Leases(metav1.NamespaceSystem).Update(ctx, other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	live := createIdentityLease(t, srv.Client, "live-replica", ptr(now), ptr(int32(3600)))
	hostname, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	own := leaseName(t, hostname) // the server's own, published by serve
	waitFor(t, 10*time.Second, "the server's identity lease", func() bool { return getLease(t, srv.Client, own) != nil })

	gc := apiserveridentity.NewCollector(serverLister(t, srv.Client), srv.Client, logger(), nil)
	if _, err := gc.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{gone.Name, neverRenewed.Name, noDuration.Name} {
		if getLease(t, srv.Client, l) != nil {
			t.Errorf("expired identity lease %s survived", l)
		}
	}
	for _, l := range []string{quiet.Name, other.Name, live.Name, own} {
		if getLease(t, srv.Client, l) == nil {
			t.Errorf("lease %s was deleted; it is not an expired identity lease", l)
		}
	}
	if n, err := gc.Collect(ctx); err != nil || n != 0 {
		t.Errorf("second pass deleted %d (err %v), want 0", n, err)
	}
}

// TestCollectRechecksTheServer: a lease the lister (a lagging cache) shows
// expired but that its replica has renewed since is not deleted.
func TestCollectRechecksTheServer(t *testing.T) {
	srv := servertest.Start(t)
	stale := createIdentityLease(t, srv.Client, "came-back", ptr(time.Now().Add(-2*time.Hour)), ptr(int32(3600)))
	renewed := stale.DeepCopy()
	renewed.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	if _, err := srv.Client.CoordinationV1().Leases(metav1.NamespaceSystem).Update(context.Background(), renewed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	gc := apiserveridentity.NewCollector(func() []*coordinationv1.Lease { return []*coordinationv1.Lease{stale} }, srv.Client, logger(), nil)
	n, err := gc.Collect(context.Background())
	if err != nil || n != 0 {
		t.Fatalf("Collect deleted %d (err %v), want 0", n, err)
	}
	if getLease(t, srv.Client, stale.Name) == nil {
		t.Fatal("a renewed lease was deleted on the strength of a stale copy")
	}
}
