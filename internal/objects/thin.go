package objects

import (
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/internal/watchcache"
)

// The watch cache's thin events (watchcache's thin.go) for resources with
// a registry.Renewal. Two versions of such an object are one renewal apart
// when they differ only in:
//
//   - the renewal time (a Lease's spec.renewTime),
//   - metadata.resourceVersion, which the event's revision restores,
//   - the time of its managedFields entry, if it has one (the renewer's,
//     moved by renewalManagedFields).
//
// The Delta holds the older version's own values of both times, not only
// those that changed: the cache rebuilds every version of a chain of
// renewals from the newest one alone, so each Delta must restore all a
// renewal may move. That is why an object with more than one
// managedFields entry is kept whole: any of them might move along the
// chain. A node lease has one, its kubelet's.
//
//	d[0]  renewal time, Unix nanoseconds
//	d[1]  managedFields entry time, Unix nanoseconds (if deltaFieldsTime)
//	d[2]  flags: deltaRenewLocal, deltaFieldsTime, deltaFieldsLocal
//
// A time is kept only if it comes back from the Delta exactly as it was,
// location included (UTC or Local, as the decoders and secondStamps make
// them), so the rebuilt object equals the older one field for field; any
// other time, and any other difference, keeps the older version whole.
const (
	deltaRenewLocal = 1 << iota
	deltaFieldsTime
	deltaFieldsLocal
)

// thin is the watch cache's Options.Thin.
func (f *Form) thin(key string, older, newer runtime.Object) (watchcache.Delta, bool) {
	var d watchcache.Delta
	res, err := f.byKey.lookup(key)
	if err != nil || res.Renewal == nil ||
		older.GetObjectKind().GroupVersionKind() != newer.GetObjectKind().GroupVersionKind() {
		return d, false
	}
	om, err1 := ObjectMeta(older)
	nm, err2 := ObjectMeta(newer)
	if err1 != nil || err2 != nil || len(om.ManagedFields) > 1 || !sameMetadataButTimes(om, nm) {
		return d, false
	}
	renewed, ok := res.Renewal.Only(older, newer)
	if !ok {
		return d, false
	}
	var local bool
	if d[0], local, ok = packTime(renewed); !ok {
		return d, false
	}
	if local {
		d[2] |= deltaRenewLocal
	}
	if len(om.ManagedFields) == 1 {
		ot, nt := om.ManagedFields[0].Time, nm.ManagedFields[0].Time
		if (ot == nil) != (nt == nil) {
			return d, false
		}
		if ot != nil {
			if d[1], local, ok = packTime(ot.Time); !ok {
				return d, false
			}
			d[2] |= deltaFieldsTime
			if local {
				d[2] |= deltaFieldsLocal
			}
		}
	}
	return d, true
}

// thicken is the watch cache's Options.Thicken.
func (f *Form) thicken(key string, newer runtime.Object, d watchcache.Delta, rev int64) runtime.Object {
	res, err := f.byKey.lookup(key)
	if err != nil || res.Renewal == nil {
		// Unreachable: thin accepted the key, and resources do not change.
		panic("thin event for a key without a renewal: " + key)
	}
	obj := newer.DeepCopyObject()
	res.Renewal.Set(obj, unpackTime(d[0], d[2]&deltaRenewLocal != 0))
	m, err := ObjectMeta(obj)
	if err != nil {
		panic("thin event for an object without metadata: " + key)
	}
	m.ResourceVersion = strconv.FormatInt(rev, 10)
	if d[2]&deltaFieldsTime != 0 {
		t := metav1.NewTime(unpackTime(d[1], d[2]&deltaFieldsLocal != 0))
		m.ManagedFields[0].Time = &t
	}
	return obj
}

// sameMetadataButTimes reports whether a and b are equal but for their
// resourceVersion and their managedFields entries' times.
func sameMetadataButTimes(a, b *metav1.ObjectMeta) bool {
	//lint:ignore SA1019 a stored object may still carry a selfLink, and a thin version must keep it
	sameSelfLink := a.SelfLink == b.SelfLink
	return a.Name == b.Name && a.Namespace == b.Namespace && a.UID == b.UID && sameSelfLink &&
		a.Generation == b.Generation && a.CreationTimestamp.Time == b.CreationTimestamp.Time &&
		sameTimePtr(a.DeletionTimestamp, b.DeletionTimestamp) &&
		ptr.Equal(a.DeletionGracePeriodSeconds, b.DeletionGracePeriodSeconds) &&
		sameUserMetadata(a, b) &&
		slices.EqualFunc(a.ManagedFields, b.ManagedFields, sameManagedFieldsEntryButTime)
}

func sameTimePtr(a, b *metav1.Time) bool {
	return a == b || (a != nil && b != nil && a.Time == b.Time)
}

// packTime returns t in Unix nanoseconds and whether it is in Local
// (else UTC); ok only if unpackTime gives t back exactly.
func packTime(t time.Time) (ns int64, local, ok bool) {
	ns, local = t.UnixNano(), t.Location() == time.Local
	return ns, local, (local || t.Location() == time.UTC) && unpackTime(ns, local) == t
}

func unpackTime(ns int64, local bool) time.Time {
	if local {
		return time.Unix(0, ns)
	}
	return time.Unix(0, ns).UTC()
}
