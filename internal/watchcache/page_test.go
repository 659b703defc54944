package watchcache

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/storage"
)

// keysOf is the namespace/name of each lease.
func keysOf(objs []runtime.Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		l := o.(*coordinationv1.Lease)
		out[i] = l.Namespace + "/" + l.Name
	}
	return out
}

// pageAll reads prefix page by page and returns every object and the pages' visits.
func pageAll(t *testing.T, c *Cache, prefix string, limit int, pred func(runtime.Object) bool) ([]string, []int) {
	t.Helper()
	var (
		all    []string
		visits []int
		start  string
	)
	for {
		p, err := c.ListPage(context.Background(), PageRequest{Prefix: prefix, Start: start, Limit: limit, Predicate: pred})
		if err != nil {
			t.Fatalf("ListPage: %v", err)
		}
		all = append(all, keysOf(p.Objects)...)
		visits = append(visits, p.Visited)
		p.Release()
		if p.Next == "" {
			return all, visits
		}
		start = p.Next
	}
}

func TestPagesAddUpToTheFullList(t *testing.T) {
	s, c := coldCache(t, 101) // namespaces a and b
	for _, cold := range []bool{false, true} {
		if cold {
			freezeAll(t, c)
		}
		odd := func(o runtime.Object) bool { return strings.HasSuffix(holderOf(o), "1") }
		for _, prefix := range []string{leasePrefix, leasePrefix + "a/"} {
			for _, pred := range []func(runtime.Object) bool{nil, odd} {
				full, _ := c.List(prefix, pred)
				for _, limit := range []int{1, 7, 50, 1000} {
					got, _ := pageAll(t, c, prefix, limit, pred)
					if fmt.Sprint(got) != fmt.Sprint(keysOf(full)) {
						t.Fatalf("cold=%v prefix %s limit %d: pages %v, full list %v", cold, prefix, limit, got, keysOf(full))
					}
				}
			}
		}
	}
	// The pages do not depend on the write that follows them.
	update(t, s, "a", "l0000", "later", nil)
}

// A first page visits its limit of entries, not the list, and knows how
// many keys follow it.
func TestFirstPageVisitsOnlyItsPage(t *testing.T) {
	_, c := coldCache(t, 1000)
	p, err := c.ListPage(context.Background(), PageRequest{Prefix: leasePrefix, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	if p.Visited != 10 || len(p.Objects) != 10 {
		t.Fatalf("visited %d, returned %d; want 10 and 10", p.Visited, len(p.Objects))
	}
	if p.Remaining != 990 {
		t.Fatalf("remaining %d, want 990", p.Remaining)
	}
	if cap(p.Objects) != 10 {
		t.Fatalf("page slice capacity %d, want 10", cap(p.Objects))
	}
	// The namespace prefix is counted too.
	p2, err := c.ListPage(context.Background(), PageRequest{Prefix: leasePrefix + "b/", Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Release()
	if p2.Visited != 3 || p2.Remaining != 497 {
		t.Fatalf("namespace page: visited %d remaining %d, want 3 and 497", p2.Visited, p2.Remaining)
	}
	// A later page and a filtered page do not claim a count.
	p3, err := c.ListPage(context.Background(), PageRequest{Prefix: leasePrefix, Start: p.Next, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer p3.Release()
	if p3.Remaining != -1 || p3.Visited != 10 {
		t.Fatalf("continued page: remaining %d visited %d, want -1 and 10", p3.Remaining, p3.Visited)
	}
	// The full list's slice is exactly its size.
	all, _ := c.List(leasePrefix, nil)
	if len(all) != 1000 || cap(all) != 1000 {
		t.Fatalf("full list len %d cap %d, want 1000 and 1000", len(all), cap(all))
	}
}

// With a predicate, hot entries it rejects are visited but cost nothing; the
// page holds at most limit objects.
func TestFilteredPageStopsAtItsLimit(t *testing.T) {
	s, c := coldCache(t, 100)
	only := func(o runtime.Object) bool { return holderOf(o) == "holder-50" || holderOf(o) == "holder-52" }
	p, err := c.ListPage(context.Background(), PageRequest{Prefix: leasePrefix + "a/", Limit: 1, Predicate: only})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	if got := keysOf(p.Objects); len(got) != 1 || got[0] != "a/l0050" {
		t.Fatalf("page %v, want [a/l0050]", got)
	}
	if p.Visited != 26 || p.Next != leaseKey("a", "l0050")+"\x00" {
		t.Fatalf("visited %d next %q, want 26 entries and the key after a/l0050", p.Visited, p.Next)
	}

	// Counts follow deletions and creations; a namespace emptied is forgotten.
	for i := 0; i < 100; i += 2 {
		remove(t, s, "a", fmt.Sprintf("l%04d", i))
	}
	create(t, s, "c", "new", "h", nil)
	if err := c.WaitForRevision(testCtx(t), mustRevision(t, s)); err != nil {
		t.Fatal(err)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if _, ok := c.counts[leasePrefix+"a/"]; ok {
		t.Fatalf("emptied namespace a still counted: %v", c.counts)
	}
	if n, _ := c.counts.count(leasePrefix); n != 51 {
		t.Fatalf("%d leases counted, want 51", n)
	}
	if n, _ := c.counts.count(leasePrefix + "c/"); n != 1 {
		t.Fatalf("%d leases counted in c, want 1", n)
	}
}

func mustRevision(t *testing.T, s storage.Interface) int64 {
	t.Helper()
	rev, err := s.CurrentRevision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// Pages hold their share of the list budget until released; a list that
// does not fit waits, and gives up with its context.
func TestListBudgetBoundsConcurrentPages(t *testing.T) {
	s := newStoreT(t)
	for i := range 30 {
		create(t, s, "a", fmt.Sprintf("l%02d", i), "h", nil)
	}
	c := startCache(t, s, Options{ListBudget: 40})
	ctx := context.Background()
	first, err := c.ListPage(ctx, PageRequest{Prefix: leasePrefix})
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := c.ListPage(short, PageRequest{Prefix: leasePrefix}); err == nil {
		t.Fatal("a second full list fit in a budget the first one holds")
	}
	// A small page fits beside it.
	small, err := c.ListPage(ctx, PageRequest{Prefix: leasePrefix, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	small.Release()

	got := make(chan error, 1)
	go func() {
		p, err := c.ListPage(ctx, PageRequest{Prefix: leasePrefix})
		if err == nil {
			p.Release()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("second full list returned (%v) while the first held the budget", err)
	case <-time.After(50 * time.Millisecond):
	}
	first.Release()
	first.Release() // a second call does nothing
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("second full list still waiting after the first was released")
	}
	if c.lists.avail != 40 {
		t.Fatalf("budget %d after every page was released, want 40", c.lists.avail)
	}
}
