package apiserver_test

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/leasehold/leasehold/internal/server/servertest"
)

// TestLabelSelectedWatchThroughRenewals watches leases by label over HTTP
// while one is renewed, relabelled out of the selection and back: the
// renewals (whose previous states the cache does not keep) arrive as
// MODIFIED, the relabelling as DELETED and ADDED.
func TestLabelSelectedWatchThroughRenewals(t *testing.T) {
	srv := servertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leases := srv.Client.CoordinationV1().Leases("default")
	l := newLease("watched", "a")
	l.Labels["tier"] = "hot"
	l, err := leases.Create(ctx, l, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := leases.Watch(ctx, metav1.ListOptions{LabelSelector: "tier=hot", ResourceVersion: l.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	step := func(change func(*coordinationv1.Lease), want watch.EventType, wantTier string) {
		t.Helper()
		change(l)
		if l, err = leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if want == "" {
			return
		}
		select {
		case ev := <-w.ResultChan():
			got := ev.Object.(*coordinationv1.Lease)
			if ev.Type != want || got.ResourceVersion != l.ResourceVersion || got.Labels["tier"] != wantTier {
				t.Fatalf("got %s rv %s tier %q, want %s rv %s tier %q", ev.Type, got.ResourceVersion, got.Labels["tier"], want, l.ResourceVersion, wantTier)
			}
		case <-ctx.Done():
			t.Fatalf("no %s event", want)
		}
	}
	renew := func(l *coordinationv1.Lease) { l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()} }
	step(renew, watch.Modified, "hot")
	step(renew, watch.Modified, "hot")
	step(func(l *coordinationv1.Lease) { l.Labels["tier"] = "cold" }, watch.Deleted, "cold")
	step(renew, "", "") // not selected, before or after: nothing
	step(func(l *coordinationv1.Lease) { l.Labels["tier"] = "hot" }, watch.Added, "hot")
	step(renew, watch.Modified, "hot")
}
