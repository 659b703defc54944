package apiserveridentity_test

import (
	"context"
	"os"
	"regexp"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/controller/apiserveridentity"
	"github.com/leasehold/leasehold/internal/server/servertest"
)

// TestServePublishesIdentityLease: a running server publishes the lease
// kube-apiserver would publish on this host, found by both label selectors.
func TestServePublishesIdentityLease(t *testing.T) {
	srv := servertest.Start(t)
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	name := leaseName(t, host)
	waitFor(t, 10*time.Second, "the identity lease", func() bool { return getLease(t, srv.Client, name) != nil })
	l := getLease(t, srv.Client, name)

	for k, want := range map[string]string{
		"apiserver.kubernetes.io/identity": "kube-apiserver",
		"k8s.io/component":                 "kube-apiserver",
		"kubernetes.io/hostname":           host,
	} {
		if got, ok := l.Labels[k]; !ok || got != want {
			t.Errorf("label %s = %q (set: %v), want %q", k, got, ok, want)
		}
	}
	holder := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	if l.Spec.HolderIdentity == nil || !holder.MatchString(*l.Spec.HolderIdentity) {
		t.Errorf("holderIdentity = %v, want %s", l.Spec.HolderIdentity, holder)
	}
	if l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds != 3600 {
		t.Errorf("leaseDurationSeconds = %v, want 3600", l.Spec.LeaseDurationSeconds)
	}
	if l.Spec.RenewTime == nil || time.Since(l.Spec.RenewTime.Time) > time.Minute {
		t.Errorf("renewTime = %v, want recent", l.Spec.RenewTime)
	}
	// Like kube-apiserver's: no acquireTime, transitions or owner.
	if l.Spec.AcquireTime != nil || l.Spec.LeaseTransitions != nil || len(l.OwnerReferences) != 0 {
		t.Errorf("identity lease carries fields kube-apiserver does not write: %+v %+v", l.Spec, l.OwnerReferences)
	}

	for _, sel := range []string{apiserveridentity.Selector, "k8s.io/component=kube-apiserver"} {
		list, err := srv.Client.CoordinationV1().Leases(metav1.NamespaceSystem).List(context.Background(), metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			t.Fatalf("list -l %s: %v", sel, err)
		}
		if len(list.Items) != 1 || list.Items[0].Name != name {
			t.Errorf("list -l %s: %d leases, want exactly %s", sel, len(list.Items), name)
		}
	}
}

// TestServeCollectsAtStart: a server collects the expired identity lease of
// a replica that is gone as soon as it starts (kube-apiserver's collector
// runs once when its informer has synced, then hourly), reading candidates
// from its watch cache; and a restarted server takes over its own lease
// under its new holder identity.
func TestServeCollectsAtStart(t *testing.T) {
	dir := t.TempDir()
	first := servertest.StartIn(t, dir)
	host, _ := os.Hostname()
	own := leaseName(t, host)
	waitFor(t, 10*time.Second, "the identity lease", func() bool { return getLease(t, first.Client, own) != nil })
	before := getLease(t, first.Client, own)
	gone := createIdentityLease(t, first.Client, "gone-replica", ptr(time.Now().Add(-2*time.Hour)), ptr(int32(3600)))
	first.Stop()

	second := servertest.StartIn(t, dir)
	waitFor(t, 10*time.Second, "the gone replica's lease to be collected", func() bool {
		return getLease(t, second.Client, gone.Name) == nil
	})
	waitFor(t, 10*time.Second, "the restarted server to take its lease over", func() bool {
		l := getLease(t, second.Client, own)
		return l != nil && *l.Spec.HolderIdentity != *before.Spec.HolderIdentity
	})
	after := getLease(t, second.Client, own)
	if after.UID != before.UID {
		t.Errorf("the restarted server made a new lease (uid %s, was %s), want the same object taken over", after.UID, before.UID)
	}
	if !after.Spec.RenewTime.After(before.Spec.RenewTime.Time) {
		t.Errorf("renewTime did not advance across the restart: %v then %v", before.Spec.RenewTime, after.Spec.RenewTime)
	}
}
