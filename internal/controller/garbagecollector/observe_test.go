package garbagecollector

import (
	"slices"
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

// A lease renewal (same owner references) is quiet: observing it allocates
// nothing and changes nothing; a changed reference gets new edges.
func TestObserveKeepsTheEdgesOfUnchangedReferences(t *testing.T) {
	nodes, leases := noderesource.Resource(time.Now), lease.Resource(time.Now)
	// An empty cache that never runs: owners missing from the graph are
	// missing from it too.
	empty := watchcache.New(nil, watchcache.Options{Window: 1})
	gc := &GarbageCollector{cache: empty, res: newResources(registry.NewSet(nodes, leases)), graph: newGraph(), warned: map[types.UID]bool{}}
	for _, n := range []string{"n1", "n2"} {
		gc.graph.set(nodes.Key("", n), node{uid: types.UID("uid-" + n)})
	}
	ref := func(n string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: n, UID: types.UID("uid-" + n)}
	}
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: corev1.NamespaceNodeLease, UID: "lease",
		OwnerReferences: []metav1.OwnerReference{ref("n1"), ref("n2")}}}
	key := leases.Key(l.Namespace, l.Name)
	var enqueued []string
	observe := func() node {
		t.Helper()
		enqueued = nil
		if err := gc.observe(watchcache.Event{Type: watch.Modified, Key: key, Object: l}, func(k string) { enqueued = append(enqueued, k) }); err != nil {
			t.Fatal(err)
		}
		n, ok := gc.graph.get(key)
		if !ok {
			t.Fatal("the lease is not in the graph")
		}
		return n
	}
	first := observe()
	if len(first.owners) != 2 || first.owners[1].owner != nodes.Key("", "n2") || len(enqueued) != 0 {
		t.Fatalf("owners %v, enqueued %v", first.owners, enqueued)
	}
	if !gc.quiet(key, l, true) {
		t.Error("a renewal with the same references and solid owners is not quiet")
	}
	renew := func() {
		if err := gc.observe(watchcache.Event{Type: watch.Modified, Key: key, Object: l}, func(k string) { enqueued = append(enqueued, k) }); err != nil {
			t.Fatal(err)
		}
	}
	if allocs := testing.AllocsPerRun(100, renew); allocs > 0 {
		t.Errorf("observing a renewal allocates %v times", allocs)
	}
	if again := observe(); !slices.Equal(again.owners, first.owners) || len(enqueued) != 0 {
		t.Fatalf("after renewals: owners %v, enqueued %v", again.owners, enqueued)
	}

	l.OwnerReferences[1] = ref("n3") // not in the graph: a worker must look
	changed := observe()
	if changed.owners[1].owner != nodes.Key("", "n3") || changed.owners[0] != first.owners[0] || len(enqueued) != 1 {
		t.Fatalf("owners %v, enqueued %v", changed.owners, enqueued)
	}
	if deps := gc.graph.dependentsOf(nodes.Key("", "n2")); len(deps) != 0 {
		t.Errorf("n2 still has dependents %v", deps)
	}
	l.OwnerReferences = l.OwnerReferences[:1]
	if fewer := observe(); len(fewer.owners) != 1 || fewer.owners[0] != first.owners[0] {
		t.Fatalf("owners %v", fewer.owners)
	}
	l.OwnerReferences = nil
	if none := observe(); none.owners != nil {
		t.Fatalf("owners %v", none.owners)
	}
}

// A renewal is quiet only while its owners look solid: once an owner is
// replaced, removed or waits for its dependents, the renewal takes the full
// observation again and reaches a worker, as every renewal did before
// quiet existed.
func TestRenewalIsNotQuietOnceAnOwnerChanged(t *testing.T) {
	nodes, leases := noderesource.Resource(time.Now), lease.Resource(time.Now)
	empty := watchcache.New(nil, watchcache.Options{Window: 1})
	gc := &GarbageCollector{cache: empty, res: newResources(registry.NewSet(nodes, leases)), graph: newGraph(), warned: map[types.UID]bool{}}
	nodeKey := nodes.Key("", "n1")
	gc.graph.set(nodeKey, node{uid: "uid-n1"})
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: corev1.NamespaceNodeLease, UID: "lease",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "uid-n1"}}}}
	key := leases.Key(l.Namespace, l.Name)
	renew := func() []string {
		t.Helper()
		var enqueued []string
		if err := gc.observe(watchcache.Event{Type: watch.Modified, Key: key, Object: l}, func(k string) { enqueued = append(enqueued, k) }); err != nil {
			t.Fatal(err)
		}
		return enqueued
	}
	if got := renew(); len(got) != 0 {
		t.Fatalf("first observation enqueued %v", got)
	}
	steps := []struct {
		name   string
		change func()
		quiet  bool
		want   []string
	}{
		{"settled", func() {}, true, nil},
		{"owner replaced", func() { gc.graph.set(nodeKey, node{uid: "uid-n1-new"}) }, false, []string{key}},
		{"owner back", func() { gc.graph.set(nodeKey, node{uid: "uid-n1"}) }, true, nil},
		{"owner waits for its dependents", func() { gc.graph.set(nodeKey, node{uid: "uid-n1", deletingDependents: true}) }, false, []string{key, nodeKey, nodeKey}}, // the owner once for the references before and once for after
		{"owner settled again", func() { gc.graph.set(nodeKey, node{uid: "uid-n1"}) }, true, nil},
		{"owner removed", func() { gc.graph.remove(nodeKey) }, false, []string{key}},
	}
	for _, s := range steps {
		s.change()
		if q := gc.quiet(key, l, true); q != s.quiet {
			t.Errorf("%s: quiet = %v, want %v", s.name, q, s.quiet)
		}
		if got := renew(); !slices.Equal(got, s.want) {
			t.Errorf("%s: renewal enqueued %v, want %v", s.name, got, s.want)
		}
	}
}
