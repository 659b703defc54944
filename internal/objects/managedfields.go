package objects

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/leasehold/leasehold/internal/registry"
)

// fieldManagers are apimachinery's managed-fields machinery for one
// resource, one per subresource it serves.
type fieldManagers struct {
	main, status *managedfields.FieldManager
}

func newFieldManagers(cfg Config) (map[*registry.Resource]*fieldManagers, error) {
	out := map[*registry.Resource]*fieldManagers{}
	if cfg.TypeConverter == nil {
		return out, nil
	}
	conv := runtime.UnsafeObjectConvertor(cfg.Scheme)
	for _, res := range cfg.Resources.All() {
		gvk := res.GroupVersionKind()
		main, err := managedfields.NewDefaultFieldManager(cfg.TypeConverter, conv, cfg.Scheme, cfg.Scheme, gvk, gvk.GroupVersion(), "", nil)
		if err != nil {
			return nil, fmt.Errorf("field manager for %s: %w", gvk, err)
		}
		fm := &fieldManagers{main: main}
		if res.StatusSubresource {
			if fm.status, err = managedfields.NewDefaultFieldManager(cfg.TypeConverter, conv, cfg.Scheme, cfg.Scheme, gvk, gvk.GroupVersion(), "status", nil); err != nil {
				return nil, fmt.Errorf("status field manager for %s: %w", gvk, err)
			}
		}
		out[res] = fm
	}
	return out, nil
}

func (s *Store) FieldManager(res *registry.Resource, subresource string) *managedfields.FieldManager {
	fm := s.managers[res]
	if fm == nil {
		return nil
	}
	if subresource == "status" {
		return fm.status
	}
	return fm.main
}

// updateManagedFields records manager's ownership of the fields obj sets
// relative to live (nil for a create) and returns the object to store.
func (s *Store) updateManagedFields(res *registry.Resource, subresource string, live, obj runtime.Object, manager string) (runtime.Object, error) {
	fm := s.FieldManager(res, subresource)
	if fm == nil {
		return obj, nil
	}
	if live == nil {
		live = res.New()
		live.GetObjectKind().SetGroupVersionKind(res.GroupVersionKind())
	} else if s.renewalManagedFields(res, subresource, live, obj, manager) {
		return obj, nil
	} else {
		// live is the watch cache's shared object and the field manager
		// writes to it (TypeMeta while converting): give it a copy.
		live = live.DeepCopyObject()
	}
	out := fm.UpdateNoErrors(live, obj, manager)
	out.GetObjectKind().SetGroupVersionKind(res.GroupVersionKind())
	return out, nil
}

// renewalManagedFields is the hot-path shortcut for managedFields on an
// update: when the object has one Update entry, owned by the same manager,
// and the update only modifies fields that entry already owns (a lease
// renewal moving renewTime), the full structured-merge-diff computation
// would return the same entry with a new timestamp. It sets that result on
// obj and returns true; otherwise it changes nothing and returns false.
//
// The equivalence with managedfields.FieldManager is checked by
// TestRenewalManagedFieldsMatchesFieldManager.
func (s *Store) renewalManagedFields(res *registry.Resource, subresource string, live, obj runtime.Object, manager string) bool {
	if res.ChangedFields == nil || subresource != "" {
		return false
	}
	liveMeta, err1 := ObjectMeta(live)
	newMeta, err2 := ObjectMeta(obj)
	if err1 != nil || err2 != nil || len(liveMeta.ManagedFields) != 1 {
		return false
	}
	entry := liveMeta.ManagedFields[0]
	if entry.Manager != manager || entry.Operation != metav1.ManagedFieldsOperationUpdate || entry.Subresource != "" ||
		entry.APIVersion != res.GroupVersion.String() || entry.FieldsType != "FieldsV1" || entry.FieldsV1 == nil {
		return false
	}
	// The client may send managedFields back unchanged or leave them out
	// (then the live ones apply); anything else is a direct edit of them.
	if len(newMeta.ManagedFields) != 0 && !sameManagedFields(newMeta.ManagedFields, liveMeta.ManagedFields) {
		return false
	}
	if !sameUserMetadata(liveMeta, newMeta) {
		return false
	}
	paths, ok := res.ChangedFields(live, obj)
	if !ok {
		return false
	}
	if len(paths) > 0 {
		if !s.ownsAll(entry.FieldsV1.GetRawBytes(), paths) {
			return false
		}
		// The operation took fields, so the entry's time moves, as
		// managedFieldsUpdater does.
		entry.Time = s.stamps.at(s.now())
	}
	newMeta.ManagedFields = []metav1.ManagedFieldsEntry{entry}
	return true
}

// sameUserMetadata tells whether the metadata fields a client can change
// (and managed fields track) are equal. It compares by hand: semantic
// DeepEqual's reflection showed in renewal profiles.
func sameUserMetadata(a, b *metav1.ObjectMeta) bool {
	return maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations) &&
		slices.Equal(a.Finalizers, b.Finalizers) && a.GenerateName == b.GenerateName &&
		slices.EqualFunc(a.OwnerReferences, b.OwnerReferences, sameOwnerReference)
}

func sameOwnerReference(x, y metav1.OwnerReference) bool {
	return x.APIVersion == y.APIVersion && x.Kind == y.Kind && x.Name == y.Name && x.UID == y.UID &&
		ptr.Equal(x.Controller, y.Controller) && ptr.Equal(x.BlockOwnerDeletion, y.BlockOwnerDeletion)
}

func sameManagedFields(a, b []metav1.ManagedFieldsEntry) bool {
	return slices.EqualFunc(a, b, sameManagedFieldsEntry)
}

func sameManagedFieldsEntry(x, y metav1.ManagedFieldsEntry) bool {
	return x.Time.Equal(y.Time) && sameManagedFieldsEntryButTime(x, y)
}

// sameManagedFieldsEntryButTime compares every field of two entries but
// their times.
func sameManagedFieldsEntryButTime(x, y metav1.ManagedFieldsEntry) bool {
	return x.Manager == y.Manager && x.Operation == y.Operation && x.APIVersion == y.APIVersion &&
		x.Subresource == y.Subresource && x.FieldsType == y.FieldsType && (x.FieldsV1 == nil) == (y.FieldsV1 == nil) &&
		(x.FieldsV1 == nil || bytes.Equal(x.FieldsV1.GetRawBytes(), y.FieldsV1.GetRawBytes()))
}

// ownsAll tells whether the FieldsV1 document raw (one manager's entry)
// owns every path in paths.
//
// Each path is looked up in the set parsed from only its top-level field's
// member of raw (`{"f:spec":{...}}`), not from all of raw: membership of a
// path depends only on the subtree under its first element, and the other
// members are what makes documents unique. A kubelet's lease names its
// Node's uid under f:metadata.f:ownerReferences, so whole documents of a
// fleet never repeat and the parsed-set cache would miss (and parse) on
// every renewal; their f:spec members are a handful of shapes.
func (s *Store) ownsAll(raw []byte, paths []fieldpath.Path) bool {
	var (
		top   string
		owned *fieldpath.Set
	)
	// The key is only looked up, never kept: its memory goes back to the
	// pool (it was a third of this function's garbage, a renewal's
	// FieldsV1 being a few hundred bytes).
	buf := s.ownedKeys.get()
	key := *buf
	defer func() { s.ownedKeys.put(buf, key) }()
	for _, p := range paths {
		if len(p) == 0 || p[0].FieldName == nil || !plainJSONName(*p[0].FieldName) {
			return false
		}
		if name := *p[0].FieldName; owned == nil || name != top {
			key = append(key[:0], `{"f:`...)
			key = append(key, name...)
			key = append(key, `":`...)
			var ok bool
			if key, ok = appendMemberValue(key, raw, "f:", name); !ok {
				return false
			}
			key = append(key, '}')
			if owned, ok = s.fieldSets.getBytes(key); !ok {
				return false
			}
			top = name
		}
		if !owned.Has(p) {
			return false
		}
	}
	return true
}

// plainJSONName says whether name is written in JSON as it is, between
// quotes: API field names are, and ownsAll builds its keys from them.
func plainJSONName(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			return false
		}
	}
	return name != ""
}

// parseFieldSet parses a FieldsV1 document. Sets are shared from a cache:
// callers only read them.
func parseFieldSet(raw string) (*fieldpath.Set, bool) {
	set := &fieldpath.Set{}
	if err := set.FromJSON(strings.NewReader(raw)); err != nil {
		return nil, false
	}
	return set, true
}

// secondStamps hands out managedFields timestamps, which have a resolution
// of one second: every renewal within the same second gets the same
// *metav1.Time. At 10,000 renewals a second that is one allocation a second
// instead of one a renewal, and 100,000 cached leases point at a handful of
// stamps instead of holding one each (a heap object the collector marks on
// every cycle). Sharing is safe because stored and cached objects are never
// mutated (watchcache's invariant); code that edits a managedFields entry
// edits a DeepCopy, which copies the Time.
type secondStamps struct{ last atomic.Pointer[metav1.Time] }

// at returns the stamp of now's second (UTC, without the monotonic reading).
func (s *secondStamps) at(now time.Time) *metav1.Time {
	t := now.UTC().Truncate(time.Second)
	if p := s.last.Load(); p != nil && p.Time.Equal(t) {
		return p
	}
	p := &metav1.Time{Time: t}
	s.last.Store(p)
	return p
}

// boundedCache memoizes a pure function of a string key, for values that
// repeat across requests (Accept headers, identical managedFields sets of
// every node lease). It stops admitting new keys once full, so a client
// sending endless distinct keys costs a computation each, never memory.
//
// A plain map under a read-write lock rather than a sync.Map: the cache is
// read on every renewal and written a handful of times, and a map lookup
// by m[string(b)] neither copies a []byte key nor boxes it in an interface.
type boundedCache[V any] struct {
	mu      sync.RWMutex
	m       map[string]cacheEntry[V]
	max     int
	compute func(string) (V, bool)
}

func newBoundedCache[V any](max int, compute func(string) (V, bool)) *boundedCache[V] {
	return &boundedCache[V]{m: map[string]cacheEntry[V]{}, max: max, compute: compute}
}

// get returns the value for key; ok=false when compute said the key is invalid.
func (c *boundedCache[V]) get(key string) (V, bool) {
	c.mu.RLock()
	e, hit := c.m[key]
	c.mu.RUnlock()
	if hit {
		return e.v, e.ok
	}
	return c.add(key)
}

// getBytes is get for a key held as bytes, without converting it to a
// string unless it is missing.
func (c *boundedCache[V]) getBytes(key []byte) (V, bool) {
	c.mu.RLock()
	e, hit := c.m[string(key)]
	c.mu.RUnlock()
	if hit {
		return e.v, e.ok
	}
	return c.add(string(key))
}

// add computes key's value outside the lock and keeps it while there is room.
func (c *boundedCache[V]) add(key string) (V, bool) {
	v, ok := c.compute(key)
	c.mu.Lock()
	if _, present := c.m[key]; !present && len(c.m) < c.max {
		c.m[key] = cacheEntry[V]{v, ok}
	}
	c.mu.Unlock()
	return v, ok
}

type cacheEntry[V any] struct {
	v  V
	ok bool
}
