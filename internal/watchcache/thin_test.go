package watchcache

import (
	"maps"
	"strconv"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// numericHolderThin is a Thin for the tests' leases: a version whose
// labels equal the next one's and whose holder is a number is kept as that
// number.
func numericHolderThin(_ string, older, newer runtime.Object) (Delta, bool) {
	o, n := older.(*coordinationv1.Lease), newer.(*coordinationv1.Lease)
	h, err := strconv.ParseInt(holderOf(o), 10, 64)
	if err != nil || !maps.Equal(o.Labels, n.Labels) {
		return Delta{}, false
	}
	return Delta{h}, true
}

func numericHolderThicken(_ string, newer runtime.Object, d Delta, rev int64) runtime.Object {
	l := newer.DeepCopyObject().(*coordinationv1.Lease)
	h := strconv.FormatInt(d[0], 10)
	l.Spec.HolderIdentity = &h
	l.ResourceVersion = strconv.FormatInt(rev, 10)
	return l
}

// TestThinEventsReadAsTheyWere writes versions of which Thin accepts some
// (chains of them, one broken by a label change and one ended by a
// delete), checks the window really dropped their objects, and then reads
// the whole history with and without a predicate: every event must carry
// the object it was written with.
//
// It runs twice: with every write in the window before the next (Thin is
// then asked by the decode step) and with writes racing the cache (one
// batch may then change a key twice, and Thin is asked under the lock).
func TestThinEventsReadAsTheyWere(t *testing.T) {
	t.Run("one version per batch", func(t *testing.T) { testThinEventsReadAsTheyWere(t, true) })
	t.Run("batched", func(t *testing.T) { testThinEventsReadAsTheyWere(t, false) })
}

func testThinEventsReadAsTheyWere(t *testing.T, waitEach bool) {
	s := newStoreT(t)
	c := startCache(t, s, Options{Thin: numericHolderThin, Thicken: numericHolderThicken})
	type version struct {
		typ    watch.EventType
		holder string
		labels map[string]string
		rev    int64
	}
	blue, green := map[string]string{"c": "blue"}, map[string]string{"c": "green"}
	var written []version
	put := func(holder string, labels map[string]string) {
		typ, rev := watch.Modified, int64(0)
		if len(written) == 0 || written[len(written)-1].typ == watch.Deleted {
			typ, rev = watch.Added, create(t, s, "ns", "a", holder, labels)
		} else {
			rev = update(t, s, "ns", "a", holder, labels)
		}
		written = append(written, version{typ, holder, labels, rev})
		if waitEach {
			if err := c.WaitForRevision(testCtx(t), rev); err != nil {
				t.Fatal(err)
			}
		}
	}
	start := create(t, s, "ns", "other", "x", nil)
	for i := 1; i <= 5; i++ { // a chain of four thin versions
		put(strconv.Itoa(i), blue)
	}
	put("6", green) // not thin: the labels change; "5" is kept whole
	put("7", green)
	put("not-a-number", green) // "7" is thin; this one stays whole
	put("9", green)
	written = append(written, version{watch.Deleted, "9", green, remove(t, s, "ns", "a")})
	put("10", blue) // recreated: the deleted key's versions are not its own
	put("11", blue)
	if err := c.WaitForRevision(testCtx(t), written[len(written)-1].rev); err != nil {
		t.Fatal(err)
	}
	// Thin: 1, 2, 3, 4 (next has the same labels), 6 ("7" keeps green),
	// 7 (its successor's holder is not a number, but 7's is), 10.
	if thin, events := c.ThinEvents(); thin != 7 || events != len(written)+1 {
		t.Errorf("the window holds %d thin events of %d, want 7 of %d", thin, events, len(written)+1)
	}

	for _, pred := range []func(runtime.Object) bool{nil, func(o runtime.Object) bool {
		return o.(*coordinationv1.Lease).Labels["c"] == "blue"
	}} {
		w := mustWatch(t, c, WatchOptions{Prefix: leasePrefix + "ns/a", FromRevision: start, Predicate: pred})
		for i, v := range written {
			want := v.typ
			if pred != nil {
				if v.labels["c"] != "blue" {
					if i > 0 && written[i-1].labels["c"] == "blue" && v.typ == watch.Modified {
						want = watch.Deleted // stopped matching
					} else {
						continue
					}
				}
			}
			ev := next(t, w)
			l := ev.Object.(*coordinationv1.Lease)
			if ev.Type != want || ev.Rev != v.rev || holderOf(l) != v.holder || !maps.Equal(l.Labels, v.labels) || rvOf(t, l) != v.rev {
				t.Errorf("predicate %v, version %d: got %s %s@%d (rv %s) labels %v, want %s %s@%d labels %v",
					pred != nil, i, ev.Type, holderOf(l), ev.Rev, l.ResourceVersion, l.Labels, want, v.holder, v.rev, v.labels)
			}
		}
		expectNothing(t, w, 50*time.Millisecond)
	}
}
