package lease

import (
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

var (
	pathHolder      = fieldpath.MakePathOrDie("spec", "holderIdentity")
	pathDuration    = fieldpath.MakePathOrDie("spec", "leaseDurationSeconds")
	pathAcquire     = fieldpath.MakePathOrDie("spec", "acquireTime")
	pathRenew       = fieldpath.MakePathOrDie("spec", "renewTime")
	pathTransitions = fieldpath.MakePathOrDie("spec", "leaseTransitions")
	pathStrategy    = fieldpath.MakePathOrDie("spec", "strategy")
	pathPreferred   = fieldpath.MakePathOrDie("spec", "preferredHolder")
)

// changedFields lists the spec fields a lease update modifies. A renewal
// changes renewTime only; anything that adds or removes a field is left to
// the full managed-fields computation.
func changedFields(oldObj, newObj runtime.Object) ([]fieldpath.Path, bool) {
	o, n := &oldObj.(*coordinationv1.Lease).Spec, &newObj.(*coordinationv1.Lease).Spec
	var paths []fieldpath.Path
	ok := true
	check := func(p fieldpath.Path, oldSet, newSet, equal bool) {
		switch {
		case oldSet != newSet:
			ok = false
		case oldSet && !equal:
			paths = append(paths, p)
		}
	}
	check(pathHolder, o.HolderIdentity != nil, n.HolderIdentity != nil, o.HolderIdentity == nil || n.HolderIdentity == nil || *o.HolderIdentity == *n.HolderIdentity)
	check(pathDuration, o.LeaseDurationSeconds != nil, n.LeaseDurationSeconds != nil, o.LeaseDurationSeconds == nil || n.LeaseDurationSeconds == nil || *o.LeaseDurationSeconds == *n.LeaseDurationSeconds)
	check(pathAcquire, o.AcquireTime != nil, n.AcquireTime != nil, microEqual(o.AcquireTime, n.AcquireTime))
	check(pathRenew, o.RenewTime != nil, n.RenewTime != nil, microEqual(o.RenewTime, n.RenewTime))
	check(pathTransitions, o.LeaseTransitions != nil, n.LeaseTransitions != nil, o.LeaseTransitions == nil || n.LeaseTransitions == nil || *o.LeaseTransitions == *n.LeaseTransitions)
	check(pathStrategy, o.Strategy != nil, n.Strategy != nil, o.Strategy == nil || n.Strategy == nil || *o.Strategy == *n.Strategy)
	check(pathPreferred, o.PreferredHolder != nil, n.PreferredHolder != nil, o.PreferredHolder == nil || n.PreferredHolder == nil || *o.PreferredHolder == *n.PreferredHolder)
	return paths, ok
}

// microEqual compares MicroTimes as they serialize (microseconds).
func microEqual(a, b *metav1.MicroTime) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Truncate(1000).Equal(b.Truncate(1000))
}

// renewedOnly is the lease's registry.Renewal.Only: newer's spec equals
// older's but for renewTime, set in both. It returns older's renewTime.
func renewedOnly(older, newer runtime.Object) (time.Time, bool) {
	o, n := &older.(*coordinationv1.Lease).Spec, &newer.(*coordinationv1.Lease).Spec
	if o.RenewTime == nil || n.RenewTime == nil {
		return time.Time{}, false
	}
	same := ptr.Equal(o.HolderIdentity, n.HolderIdentity) && ptr.Equal(o.LeaseDurationSeconds, n.LeaseDurationSeconds) &&
		ptr.Equal(o.LeaseTransitions, n.LeaseTransitions) && ptr.Equal(o.Strategy, n.Strategy) &&
		ptr.Equal(o.PreferredHolder, n.PreferredHolder) &&
		(o.AcquireTime == nil) == (n.AcquireTime == nil) && (o.AcquireTime == nil || o.AcquireTime.Time == n.AcquireTime.Time)
	return o.RenewTime.Time, same
}

// setRenewTime is the lease's registry.Renewal.Set.
func setRenewTime(obj runtime.Object, t time.Time) {
	obj.(*coordinationv1.Lease).Spec.RenewTime = &metav1.MicroTime{Time: t}
}

// renewTimeWirePath is spec.renewTime's place in a Lease's protobuf
// encoding: Lease field 2 (spec), LeaseSpec field 4 (renewTime), as
// k8s.io/api/coordination/v1's generated.proto numbers them
// (TestRenewalFromWireMatchesDecoding in internal/objects holds it to decoding).
var renewTimeWirePath = []protowire.Number{2, 4}

// renewalFromWire is the lease's registry.Renewal.FromWire: value is a
// MicroTime's message, decoded as the generated Unmarshal decodes
// spec.renewTime (a fresh MicroTime, microsecond precision, local time). A
// typed copy: reflect's generic one was a fifth of recognizing a renewal.
func renewalFromWire(cur runtime.Object, value []byte) (runtime.Object, error) {
	t := new(metav1.MicroTime)
	if err := t.Unmarshal(value); err != nil {
		return nil, err
	}
	l := *cur.(*coordinationv1.Lease)
	l.Spec.RenewTime = t
	return &l, nil
}
