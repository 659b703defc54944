package leasecopy

// content.go is what a copy carries (a lease's content, not its identity)
// and the order that decides which of two copies is newer.

import (
	"maps"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// sameContent reports whether a and b carry the same lease content. A nil
// and an empty map or list are the same: the API drops empty ones, so a
// round trip must not turn into a write.
func sameContent(a, b *coordinationv1.Lease) bool {
	return equality.Semantic.DeepEqual(a.Spec, b.Spec) &&
		maps.Equal(a.Labels, b.Labels) &&
		maps.Equal(a.Annotations, b.Annotations) &&
		sameOwners(a.OwnerReferences, b.OwnerReferences)
}

func sameOwners(a, b []metav1.OwnerReference) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || equality.Semantic.DeepEqual(a, b)
}

// withContent returns a copy of dst (its name, namespace, uid,
// creationTimestamp and resourceVersion) carrying src's content.
func withContent(dst, src *coordinationv1.Lease) *coordinationv1.Lease {
	out := dst.DeepCopy()
	out.Spec = *src.Spec.DeepCopy()
	out.Labels = maps.Clone(src.Labels)
	out.Annotations = maps.Clone(src.Annotations)
	out.OwnerReferences = append([]metav1.OwnerReference(nil), src.OwnerReferences...)
	return out
}

// targetNewer reports whether the target's copy is newer than the
// source's, so that writing the source's would undo a later write: leases
// only move forward, through more transitions (a new holder) or, with as
// many, a later renewal or acquisition. Equal order with other content
// (labels, duration) is not newer: the source is the authority then.
func targetNewer(target, source *coordinationv1.Lease) bool {
	tt, st := transitions(target), transitions(source)
	if tt != st {
		return tt > st
	}
	if c := compareTimes(target.Spec.RenewTime, source.Spec.RenewTime); c != 0 {
		return c > 0
	}
	return compareTimes(target.Spec.AcquireTime, source.Spec.AcquireTime) > 0
}

func transitions(l *coordinationv1.Lease) int32 {
	if l.Spec.LeaseTransitions == nil {
		return 0
	}
	return *l.Spec.LeaseTransitions
}

// compareTimes orders two optional times, an unset one first.
func compareTimes(a, b *metav1.MicroTime) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	return a.Time.Compare(b.Time)
}
