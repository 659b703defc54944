package objects

import (
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// kubeletLeaseFields is the managedFields document of a kubelet's lease:
// its Node's uid makes it unique in a fleet.
func kubeletLeaseFields(uid string) string {
	return `{"f:metadata":{"f:ownerReferences":{".":{},"k:{\"uid\":\"` + uid + `\"}":{}}},` +
		`"f:spec":{"f:holderIdentity":{},"f:leaseDurationSeconds":{},"f:renewTime":{}}}`
}

// TestOwnsAllAgreesWithTheWholeSet checks ownsAll against membership in the
// set parsed from the whole document, for documents and paths that put the
// subtree lookup to the test: members in either order, a path's field only
// nested deeper, paths outside every member, several top-level fields.
func TestOwnsAllAgreesWithTheWholeSet(t *testing.T) {
	docs := []string{
		kubeletLeaseFields("u1"),
		`{"f:spec":{"f:renewTime":{}},"f:metadata":{"f:labels":{"f:a":{}}}}`,
		`{"f:metadata":{"f:spec":{"f:renewTime":{}}}}`,
		`{"f:spec":{".":{},"f:strategy":{}},"f:status":{"f:phase":{}}}`,
		`{}`,
	}
	paths := []fieldpath.Path{
		fieldpath.MakePathOrDie("spec", "renewTime"),
		fieldpath.MakePathOrDie("spec", "holderIdentity"),
		fieldpath.MakePathOrDie("spec", "acquireTime"),
		fieldpath.MakePathOrDie("spec"),
		fieldpath.MakePathOrDie("spec", "strategy"),
		fieldpath.MakePathOrDie("status", "phase"),
		fieldpath.MakePathOrDie("metadata", "labels", "a"),
	}
	s := &Store{fieldSets: newBoundedCache(16, parseFieldSet)}
	for _, doc := range docs {
		whole, ok := parseFieldSet(doc)
		if !ok {
			t.Fatalf("test document does not parse: %s", doc)
		}
		// Every pair of paths, in both orders, and each one alone.
		for _, a := range paths {
			for _, b := range append([]fieldpath.Path{nil}, paths...) {
				ps := []fieldpath.Path{a}
				if b != nil {
					ps = append(ps, b)
				}
				want := true
				for _, p := range ps {
					want = want && whole.Has(p)
				}
				if got := s.ownsAll([]byte(doc), ps); got != want {
					t.Errorf("ownsAll(%s, %v) = %v, the whole set says %v", doc, ps, got, want)
				}
			}
		}
	}
}

func TestOwnsAllRejectsWhatItCannotRead(t *testing.T) {
	s := &Store{fieldSets: newBoundedCache(16, parseFieldSet)}
	renew := []fieldpath.Path{fieldpath.MakePathOrDie("spec", "renewTime")}
	for _, doc := range []string{``, `[]`, `{"f:spec":`, `{"f:spec":{"f:renewTime":{}}`, `{"f:spec":[1]}`, `{"f:spec":"x"}`} {
		if s.ownsAll([]byte(doc), renew) {
			t.Errorf("ownsAll accepted %q", doc)
		}
	}
	if s.ownsAll([]byte(`{"f:sp\"ec":{}}`), []fieldpath.Path{fieldpath.MakePathOrDie(`sp"ec`)}) {
		t.Error("ownsAll accepted a field name it would have to escape")
	}
}

// TestOwnsAllSharesOneEntryAcrossAFleet is the reason for ownsAll: leases
// that differ only in their owner's uid are one cache entry, not one each.
func TestOwnsAllSharesOneEntryAcrossAFleet(t *testing.T) {
	s := &Store{fieldSets: newBoundedCache(4096, parseFieldSet)}
	renew := []fieldpath.Path{fieldpath.MakePathOrDie("spec", "renewTime")}
	for i := range 1000 {
		if !s.ownsAll([]byte(kubeletLeaseFields(fmt.Sprintf("uid-%d", i))), renew) {
			t.Fatalf("lease %d: renewTime not owned", i)
		}
	}
	if n := len(s.fieldSets.m); n != 1 {
		keys := make([]string, 0, n)
		for k := range s.fieldSets.m {
			keys = append(keys, k)
		}
		t.Fatalf("%d cache entries for 1000 leases of one shape, want 1: %s", n, strings.Join(keys[:min(3, n)], " "))
	}
}

func BenchmarkOwnsAll(b *testing.B) {
	s := &Store{fieldSets: newBoundedCache(4096, parseFieldSet)}
	renew := []fieldpath.Path{fieldpath.MakePathOrDie("spec", "renewTime")}
	docs := make([][]byte, 10000)
	for i := range docs {
		docs[i] = []byte(kubeletLeaseFields(fmt.Sprintf("0000-%06d", i)))
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if !s.ownsAll(docs[i%len(docs)], renew) {
			b.Fatal("not owned")
		}
	}
}
