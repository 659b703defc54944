package garbagecollector

import (
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/registry/lease"
	noderesource "github.com/leasehold/leasehold/internal/registry/node"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// BenchmarkObserveRenewal is the event loop's cost of one lease renewal in
// a fleet of 20,000 Nodes owning their leases (one op = one renewal event
// observed), renewals going round the fleet in order, a round at a time. Each renewal is a new
// Lease object whose strings are the previous version's, as the watch
// cache interns them; the graph was loaded by observing the fleet's Added
// events, as on a (re)watch.
func BenchmarkObserveRenewal(b *testing.B) {
	const fleet = 20_000
	nodes, leases := noderesource.Resource(time.Now), lease.Resource(time.Now)
	empty := watchcache.New(nil, watchcache.Options{Window: 1})
	gc := &GarbageCollector{cache: empty, res: newResources(registry.NewSet(nodes, leases)), graph: newGraph(), warned: map[types.UID]bool{}}
	enqueued := 0
	enqueue := func(string) { enqueued++ }
	keys := make([]string, fleet)
	cur := make([]*coordinationv1.Lease, fleet)
	for i := range fleet {
		name := fmt.Sprintf("node-%05d", i)
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))}}
		if err := gc.observe(watchcache.Event{Type: watch.Added, Key: nodes.Key("", name), Object: n}, enqueue); err != nil {
			b.Fatal(err)
		}
		keys[i] = leases.Key(corev1.NamespaceNodeLease, name)
		cur[i] = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease,
			UID:             types.UID(fmt.Sprintf("00000000-0000-4000-9000-%012d", i)),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: n.UID}}}}
		if err := gc.observe(watchcache.Event{Type: watch.Added, Key: keys[i], Object: cur[i]}, enqueue); err != nil {
			b.Fatal(err)
		}
	}
	now := metav1.NewMicroTime(time.Now())
	renewals := make([]*coordinationv1.Lease, fleet)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += fleet {
		// A round of renewals is made untimed: a new object per lease, its
		// strings the old one's.
		b.StopTimer()
		for j, l := range cur {
			next := *l
			next.OwnerReferences = append([]metav1.OwnerReference(nil), l.OwnerReferences...)
			next.Spec.RenewTime = &now
			renewals[j] = &next
		}
		b.StartTimer()
		for j := range min(fleet, b.N-done) {
			if err := gc.observe(watchcache.Event{Type: watch.Modified, Key: keys[j], Object: renewals[j]}, enqueue); err != nil {
				b.Fatal(err)
			}
		}
		cur, renewals = renewals, cur
	}
	b.StopTimer()
	if enqueued != 0 {
		b.Fatalf("renewals of a settled fleet enqueued %d keys", enqueued)
	}
}
