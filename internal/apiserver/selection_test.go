package apiserver_test

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/leasehold/leasehold/internal/apiserver"
	"github.com/leasehold/leasehold/internal/served"
	"github.com/leasehold/leasehold/internal/server/servertest"
)

func TestSameSelection(t *testing.T) {
	same := apiserver.SameSelection(served.Stored(time.Now))
	lease := newLease("l", "a")
	renewed := lease.DeepCopy()
	renewed.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(time.Second)}
	relabelled := lease.DeepCopy()
	relabelled.Labels["tier"] = "hot"
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "n1"}, Reason: "NodeReady"}
	counted := ev.DeepCopy()
	counted.Count = 2
	moved := ev.DeepCopy()
	moved.Reason = "NodeNotReady" // a selectable field of events
	cases := []struct {
		name      string
		got, want bool
	}{
		{"lease renewal", same("/registry/leases/default/l", lease, renewed), true},
		{"lease labels", same("/registry/leases/default/l", lease, relabelled), false},
		{"event count", same("/registry/events/default/e", ev, counted), true},
		{"event reason", same("/registry/events/default/e", ev, moved), false},
		{"unknown key", same("/registry/widgets/x", lease, renewed), false},
		{"not a key", same("leases", lease, renewed), false},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s: SameSelection = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

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
