package watchcache

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// encodeJSON is the tests' Options.Encode: the inverse of decodeLease.
func encodeJSON(obj runtime.Object) ([]byte, error) { return json.Marshal(obj) }

// coldCount is the number of entries the cache keeps compressed.
func coldCount(c *Cache) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := 0
	for _, e := range c.objects {
		if e.obj == nil {
			n++
		}
	}
	return n
}

// freezeAll freezes every entry unchanged since now, as a demoter round does.
func freezeAll(t *testing.T, c *Cache) int {
	t.Helper()
	var scratch []byte
	return c.freezeUpTo(context.Background(), c.Revision(), nil, &scratch)
}

// coldCache is a cache whose demoter never runs on its own (the tests freeze
// explicitly), with leases in namespaces a and b.
func coldCache(t *testing.T, n int) (*memStore, *Cache) {
	t.Helper()
	s := newStoreT(t)
	for i := range n {
		create(t, s, []string{"a", "b"}[i%2], fmt.Sprintf("l%04d", i), "holder-"+fmt.Sprint(i), map[string]string{"app": "x"})
	}
	return s, startCache(t, s, Options{Encode: encodeJSON, ColdAfter: time.Hour})
}

func TestColdEntriesReadAsTheyWereStored(t *testing.T) {
	const n = 50
	s, c := coldCache(t, n)
	hot, _ := c.List(leasePrefix, nil)
	if got := freezeAll(t, c); got != n {
		t.Fatalf("froze %d entries, want %d", got, n)
	}
	if got := coldCount(c); got != n {
		t.Fatalf("%d cold entries, want %d", got, n)
	}

	cold, rev := c.List(leasePrefix, nil)
	if rev != c.Revision() || !apiequality.Semantic.DeepEqual(cold, hot) {
		t.Fatalf("List of cold entries differs from the decoded list")
	}
	onlyB, _ := c.List(leasePrefix+"b/", func(o runtime.Object) bool { return holderOf(o) != "holder-1" })
	if len(onlyB) != n/2-1 {
		t.Fatalf("List(b/, pred) = %d objects, want %d", len(onlyB), n/2-1)
	}
	for _, want := range hot {
		l := want.(*coordinationv1.Lease)
		got, ok := c.Get(leaseKey(l.Namespace, l.Name))
		if !ok || !apiequality.Semantic.DeepEqual(got, want) {
			t.Fatalf("Get(%s) = %v, %v; want %v", l.Name, got, ok, want)
		}
		got, ok = c.GetUnder(leasePrefix+l.Namespace+"/", l.Name)
		if !ok || !apiequality.Semantic.DeepEqual(got, want) {
			t.Fatalf("GetUnder(%s) = %v, %v; want %v", l.Name, got, ok, want)
		}
	}
	revs, _ := c.ListRevisions(leasePrefix+"a/", nil)
	if len(revs) != n/2 {
		t.Fatalf("ListRevisions(a/) = %d keys, want %d", len(revs), n/2)
	}
	for _, kr := range revs {
		kv, err := s.Get(context.Background(), kr.Key)
		if err != nil || kv.ModRevision != kr.ModRevision {
			t.Fatalf("ListRevisions: %s at %d, store has %d (%v)", kr.Key, kr.ModRevision, kv.ModRevision, err)
		}
	}

	// A watch's initial state decodes them too, predicate applied.
	w := mustWatch(t, c, WatchOptions{Prefix: leasePrefix + "a/", InitialState: true,
		Predicate: func(o runtime.Object) bool { return holderOf(o) != "holder-0" }})
	for i := 2; i < n; i += 2 {
		ev := next(t, w)
		if ev.Type != watch.Added || holderOf(ev.Object) != fmt.Sprintf("holder-%d", i) || ev.Rev != rvOf(t, ev.Object) {
			t.Fatalf("initial event %d: %s %s rev %d", i, ev.Type, ev.Key, ev.Rev)
		}
	}
}

// A renewed object (changed after the mark) stays decoded, and a frozen one
// is decoded again by the write that changes it.
func TestOnlyUnchangedEntriesGoCold(t *testing.T) {
	s, c := coldCache(t, 4)
	mark := c.Revision()
	rev := update(t, s, "a", "l0000", "renewed", map[string]string{"app": "x"})
	if err := c.WaitForRevision(testCtx(t), rev); err != nil {
		t.Fatal(err)
	}
	var scratch []byte
	if got := c.freezeUpTo(context.Background(), mark, nil, &scratch); got != 3 {
		t.Fatalf("froze %d entries, want the 3 unchanged since the mark", got)
	}
	c.mu.RLock()
	renewedHot := c.objects[leaseKey("a", "l0000")].obj != nil
	c.mu.RUnlock()
	if !renewedHot {
		t.Fatal("the entry changed after the mark was frozen")
	}

	rev = update(t, s, "b", "l0001", "moved", map[string]string{"app": "x"})
	if err := c.WaitForRevision(testCtx(t), rev); err != nil {
		t.Fatal(err)
	}
	if got := coldCount(c); got != 2 {
		t.Fatalf("%d cold entries after writing a cold one, want 2", got)
	}
	obj, _ := c.Get(leaseKey("b", "l0001"))
	if holderOf(obj) != "moved" || rvOf(t, obj) != rev {
		t.Fatalf("rewritten entry: holder %q at %d, want moved at %d", holderOf(obj), rvOf(t, obj), rev)
	}
}

// Watchers with a predicate judge a change of a cold entry against its
// previous state, and a deleted cold entry is sent with its last state.
func TestColdEntryChangesReachWatchers(t *testing.T) {
	s, c := coldCache(t, 4)
	freezeAll(t, c)
	w := mustWatch(t, c, WatchOptions{Prefix: leasePrefix, Predicate: func(o runtime.Object) bool {
		return o.(*coordinationv1.Lease).Labels["app"] == "x"
	}})

	rev := update(t, s, "a", "l0000", "holder-0", map[string]string{"app": "y"})
	if ev := next(t, w); ev.Type != watch.Deleted || ev.Rev != rev || ev.Key != leaseKey("a", "l0000") {
		t.Fatalf("leaving the selection: %s %s at %d, want DELETED at %d", ev.Type, ev.Key, ev.Rev, rev)
	}
	rev = update(t, s, "b", "l0001", "other", map[string]string{"app": "x"})
	if ev := next(t, w); ev.Type != watch.Modified || ev.Rev != rev || holderOf(ev.Object) != "other" {
		t.Fatalf("staying in the selection: %s %s at %d, want MODIFIED at %d", ev.Type, ev.Key, ev.Rev, rev)
	}
	rev = remove(t, s, "a", "l0002")
	ev := next(t, w)
	if ev.Type != watch.Deleted || ev.Rev != rev || rvOf(t, ev.Object) != rev || holderOf(ev.Object) != "holder-2" {
		t.Fatalf("deleting a cold entry: %s %s at %d (object at %d), want DELETED with its last state at %d", ev.Type, ev.Key, ev.Rev, rvOf(t, ev.Object), rev)
	}
}

// Objects of one resource share a dictionary: each compresses to a fraction
// of its stored size.
func TestColdValuesAreCompressedAgainstTheirClass(t *testing.T) {
	const n = 40
	_, c := coldCache(t, n)
	freezeAll(t, c)
	c.mu.RLock()
	defer c.mu.RUnlock()
	var stored, cold int
	for _, e := range c.objects {
		if e.key == leaseKey("a", "l0000") {
			continue // the dictionary itself
		}
		b, err := encodeJSON(c.mustThawLocked(t, e))
		if err != nil {
			t.Fatal(err)
		}
		stored += len(b)
		cold += len(e.cold)
	}
	if cold*4 > stored {
		t.Fatalf("cold values take %d B for %d B stored: want under a quarter", cold, stored)
	}
	if got := len(*c.cold.classes.Load()); got != 1 {
		t.Fatalf("%d classes for one resource, want 1", got)
	}
}

func (c *Cache) mustThawLocked(t *testing.T, e *entry) runtime.Object {
	t.Helper()
	obj, ok := c.resolve(*e)
	if !ok {
		t.Fatalf("entry %s does not decode", e.key)
	}
	return obj
}

func TestColdClassesFollowTheResource(t *testing.T) {
	cs := newColdStore("/registry/")
	for key, want := range map[string]string{
		"/registry/leases/ns/a":  "/registry/leases/",
		"/registry/minions/n1":   "/registry/minions/",
		"/registry/flat":         "/registry/",
		"/elsewhere/leases/ns/a": "/registry/",
	} {
		if got := cs.className(key); got != want {
			t.Errorf("className(%q) = %q, want %q", key, got, want)
		}
	}
}

// The demoter freezes on its own, and readers racing it and the writers
// always see a whole, current-or-newer object.
func TestDemoterRacesReadersSafely(t *testing.T) {
	s := newStoreT(t)
	const n = 20
	for i := range n {
		create(t, s, "a", fmt.Sprintf("l%04d", i), "h0", nil)
	}
	c := startCache(t, s, Options{Encode: encodeJSON, ColdAfter: 5 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for r := range 3 {
		wg.Go(func() {
			for ctx.Err() == nil {
				key := leaseKey("a", fmt.Sprintf("l%04d", r))
				obj, ok := c.Get(key)
				if !ok {
					errs <- fmt.Errorf("Get(%s): missing", key)
					return
				}
				if l := obj.(*coordinationv1.Lease); l.Name == "" || l.ResourceVersion == "" {
					errs <- fmt.Errorf("Get(%s) returned a partial object %+v", key, l)
					return
				}
				if objs, _ := c.List(leasePrefix, nil); len(objs) != n {
					errs <- fmt.Errorf("List: %d objects, want %d", len(objs), n)
					return
				}
			}
		})
	}
	sawCold := false
	for i := 0; ctx.Err() == nil; i++ {
		if i%50 == 49 {
			time.Sleep(20 * time.Millisecond) // let the demoter catch up
		}
		rev := update(t, s, "a", fmt.Sprintf("l%04d", i%n), fmt.Sprintf("h%d", i), nil)
		_ = c.WaitForRevision(ctx, rev)
		sawCold = sawCold || coldCount(c) > 0
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if !sawCold {
		t.Fatal("the demoter froze nothing in 2 s with ColdAfter 5 ms")
	}
}

// GetUnderIfChanged hands out an object only when its revision moved past
// the one the caller saw, so a caller polling an unchanged cold entry never
// has it decoded.
func TestGetUnderIfChangedSkipsUnchangedEntries(t *testing.T) {
	s, c := coldCache(t, 2)
	freezeAll(t, c)
	prefix := leasePrefix + "a/"
	obj, seen, ok := c.GetUnderIfChanged(prefix, "l0000", 0)
	if !ok || holderOf(obj) != "holder-0" || seen != rvOf(t, obj) {
		t.Fatalf("first look: %v at %d, %v; want holder-0 at its revision", obj, seen, ok)
	}
	obj, rev, ok := c.GetUnderIfChanged(prefix, "l0000", seen)
	if !ok || obj != nil || rev != seen {
		t.Fatalf("unchanged: %v at %d, %v; want no object at %d", obj, rev, ok, seen)
	}
	if got := coldCount(c); got != 2 {
		t.Fatalf("%d cold entries after looking at an unchanged one, want 2", got)
	}

	want := update(t, s, "a", "l0000", "renewed", map[string]string{"app": "x"})
	if err := c.WaitForRevision(testCtx(t), want); err != nil {
		t.Fatal(err)
	}
	obj, rev, ok = c.GetUnderIfChanged(prefix, "l0000", seen)
	if !ok || holderOf(obj) != "renewed" || rev != want {
		t.Fatalf("changed: %v at %d, %v; want renewed at %d", obj, rev, ok, want)
	}
	if obj, rev, ok := c.GetUnderIfChanged(prefix, "missing", 0); ok || obj != nil || rev != 0 {
		t.Fatalf("missing key: %v at %d, %v; want nothing", obj, rev, ok)
	}
}

// A write to a cold entry decodes the new value only: the previous state
// stays cold in the window until a watcher with a predicate asks for it.
func TestWriteToColdEntryDecodesOnlyTheNewValue(t *testing.T) {
	s := newStoreT(t)
	for i := range 4 {
		create(t, s, "a", fmt.Sprintf("l%04d", i), "holder", map[string]string{"app": "x"})
	}
	var decodes atomic.Int64
	c := startCache(t, s, Options{Encode: encodeJSON, ColdAfter: time.Hour,
		Decode: func(key string, value []byte, rev int64, prev runtime.Object) (runtime.Object, error) {
			decodes.Add(1)
			return decodeLease(key, value, rev, prev)
		}})
	freezeAll(t, c)
	decodes.Store(0)
	rev := update(t, s, "a", "l0001", "renewed", map[string]string{"app": "x"})
	if err := c.WaitForRevision(testCtx(t), rev); err != nil {
		t.Fatal(err)
	}
	if got := decodes.Load(); got != 1 {
		t.Fatalf("%d decodes for one write to a cold entry, want 1 (the new value)", got)
	}

	// A watcher with a predicate still sees the change judged against the
	// previous state, decoded for it.
	w := mustWatch(t, c, WatchOptions{Prefix: leasePrefix, FromRevision: rev - 1,
		Predicate: func(o runtime.Object) bool { return holderOf(o) == "holder" }})
	if ev := next(t, w); ev.Type != watch.Deleted || ev.Rev != rev {
		t.Fatalf("renewed away from the selection: %s %s at %d, want DELETED at %d", ev.Type, ev.Key, ev.Rev, rev)
	}
	if got := decodes.Load(); got != 2 {
		t.Fatalf("%d decodes after a watcher judged the change, want 2", got)
	}
}

// fleetNode is the stored form (JSON) of the i-th node of a fleet: all
// alike but for their names and addresses.
func fleetNode(t *testing.T, i int) []byte {
	t.Helper()
	name := fmt.Sprintf("node-%06d", i)
	b, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]any{"name": name, "uid": fmt.Sprintf("6f0c%028d", i), "labels": map[string]string{
			"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
			"node.kubernetes.io/instance-type": "m5.large", "topology.kubernetes.io/zone": "zone-a"}},
		"status": map[string]any{
			"addresses": []map[string]string{{"type": "InternalIP", "address": fmt.Sprintf("10.0.%d.%d", i/250, i%250)}, {"type": "Hostname", "address": name}},
			"conditions": []map[string]string{
				{"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory", "message": "kubelet has sufficient memory available"},
				{"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure", "message": "kubelet has no disk pressure"},
				{"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID", "message": "kubelet has sufficient PID available"},
				{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}},
			"nodeInfo": map[string]string{"kubeletVersion": "v1.33.0", "containerRuntimeVersion": "containerd://2.0.0", "osImage": "Debian GNU/Linux 12"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// averageCold freezes nodes from..to-1 and returns their average cold size.
func averageCold(t *testing.T, s *coldStore, from, to int) int {
	t.Helper()
	var scratch []byte
	total := 0
	for i := from; i < to; i++ {
		cold, err := s.freeze("/registry/minions/"+fmt.Sprint(i), fleetNode(t, i), &scratch)
		if err != nil {
			t.Fatal(err)
		}
		total += len(cold)
	}
	return total / (to - from)
}

// TestColdClassReplacesAnUnfitDictionary: a class whose dictionary is a
// bare Node (the first to go cold) gets a new dictionary once it has
// compressed retrainAfter fleet Nodes poorly, and compresses the next ones
// several times smaller; values of the first class still decode; a class
// whose dictionary fits is kept.
func TestColdClassReplacesAnUnfitDictionary(t *testing.T) {
	unfit := newColdStore("/registry/")
	var told []string
	unfit.replaced = func(name string, values, _, _ int64) { told = append(told, fmt.Sprint(name, values)) }
	var scratch []byte
	bare := []byte(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"by-hand"}}`)
	first, err := unfit.freeze("/registry/minions/by-hand", bare, &scratch)
	if err != nil {
		t.Fatal(err)
	}
	before := averageCold(t, unfit, 0, retrainAfter)
	oldValue, err := unfit.freeze("/registry/minions/0", fleetNode(t, 0), &scratch)
	if err != nil {
		t.Fatal(err)
	}
	after := averageCold(t, unfit, retrainAfter, retrainAfter+200)
	if n := len(*unfit.classes.Load()); n != 2 {
		t.Fatalf("%d classes, want the first and its replacement", n)
	}
	if want := fmt.Sprint("/registry/minions/", retrainAfter); len(told) != 1 || told[0] != want {
		t.Errorf("told of replacements %q, want [%s]", told, want)
	}
	if after*3 > before {
		t.Errorf("fleet nodes compress to %d B on average after retraining, %d before: want a third or less", after, before)
	}
	t.Logf("fleet nodes of %d B: %d B against a bare Node, %d B after retraining", len(fleetNode(t, 0)), before, after)
	for _, v := range []struct {
		cold string
		want []byte
	}{{first, bare}, {oldValue, fleetNode(t, 0)}} {
		if _, err := unfit.thaw(v.cold, func(stored []byte) (runtime.Object, error) {
			if string(stored) != string(v.want) {
				t.Errorf("thawed %q, want %q", stored, v.want)
			}
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
	}

	fit := newColdStore("/registry/")
	averageCold(t, fit, 0, 2*retrainAfter)
	if n := len(*fit.classes.Load()); n != 1 {
		t.Errorf("a class whose dictionary fits was replaced: %d classes", n)
	}
}

// A resource whose objects are written again soon after going cold is
// held decoded longer, so that its writes stop thawing them; one whose
// objects are not written is not.
func TestDemoterHoldsWhatIsRewrittenWhileCold(t *testing.T) {
	const n = minRewrites + 36
	s, c := coldCache(t, n) // leases, each written every period below
	const others = "/registry/nodes/"
	for i := range n { // another resource, never written again
		if _, err := s.Create(context.Background(), fmt.Sprintf("%sx/n%04d", others, i), encodeLease(t, "x", fmt.Sprint(i), "h", nil)); err != nil {
			t.Fatal(err)
		}
	}
	d := newDemoter()
	var scratch []byte
	ctx := context.Background()
	rewrites := func(class string) int64 {
		var sum int64
		for _, cl := range *c.cold.classes.Load() {
			if cl.name == class {
				sum += cl.rewrites.Load()
			}
		}
		return sum
	}
	const period = demoteRounds + 1 // rounds between two writes of every lease
	var before int64
	for r := range 12 * period {
		if r%period == 0 {
			var rev int64
			for i := range n {
				rev = update(t, s, []string{"a", "b"}[i%2], fmt.Sprintf("l%04d", i), fmt.Sprintf("renewed-%d", r), map[string]string{"app": "x"})
			}
			if err := c.WaitForRevision(testCtx(t), rev); err != nil {
				t.Fatal(err)
			}
		}
		if r == 8*period {
			before = rewrites(leasePrefix)
		}
		d.round(ctx, c, &scratch)
	}
	if before < minRewrites {
		t.Fatalf("%d writes to cold leases before the hold, want at least %d: they never went cold", before, minRewrites)
	}
	if got := rewrites(leasePrefix); got != before {
		t.Fatalf("leases written every %d rounds still went cold once held: %d writes to cold ones, %d before", period, got, before)
	}
	if got := d.holds[leasePrefix]; got != 2*demoteRounds {
		t.Fatalf("leases are held %d rounds, want %d", got, 2*demoteRounds)
	}
	if got, ok := d.holds[others]; ok {
		t.Fatalf("%s, never written, is held %d rounds", others, got)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	for key, e := range c.objects {
		if cold, lease := e.obj == nil, strings.HasPrefix(key, leasePrefix); cold == lease {
			t.Fatalf("%s: cold = %v", key, cold)
		}
	}
}

// The judgement's rule: rewrites at least half the freezes, both at least
// minRewrites; holds only double, up to maxHoldRounds.
func TestDemoterJudgesHolds(t *testing.T) {
	_, c := coldCache(t, 2)
	freezeAll(t, c)
	cl := (*c.cold.classes.Load())[0]
	d := newDemoter()
	d.judge(c) // counts what freezeAll froze
	for _, step := range []struct {
		frozen, rewritten int64
		want              int
	}{
		{minRewrites, minRewrites - 1, 0},     // too few rewrites
		{2 * minRewrites, minRewrites - 1, 0}, // fewer than half
		{2 * minRewrites, minRewrites, 2 * demoteRounds},
		{0, 10 * minRewrites, 2 * demoteRounds},          // rewrites of what an old hold froze
		{minRewrites - 1, minRewrites, 2 * demoteRounds}, // too few freezes
		{minRewrites, minRewrites, 4 * demoteRounds},
		{minRewrites, minRewrites, maxHoldRounds},
		{minRewrites, minRewrites, maxHoldRounds},
	} {
		cl.values.Add(step.frozen)
		cl.rewrites.Add(step.rewritten)
		d.judge(c)
		if got := d.holds[cl.name]; got != step.want {
			t.Fatalf("after %d frozen and %d rewritten: hold %d rounds, want %d", step.frozen, step.rewritten, got, step.want)
		}
	}
}

// A hold names one resource exactly: holding the class of keys directly
// under the cache's prefix, whose name is a prefix of every key, holds
// nothing else.
func TestDemoterHoldsOnlyItsResource(t *testing.T) {
	const n = 10
	_, c := coldCache(t, n)
	d := newDemoter()
	d.holds[c.cold.prefix] = maxHoldRounds
	var scratch []byte
	for range demoteRounds + 1 {
		d.round(context.Background(), c, &scratch)
	}
	if got := coldCount(c); got != n {
		t.Fatalf("%d of %d leases cold after %d rounds with only %s held, want all", got, n, demoteRounds+1, c.cold.prefix)
	}
}
