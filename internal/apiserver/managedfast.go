package apiserver

import (
	"bytes"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/leasehold/leasehold/internal/registry"
)

// renewalManagedFields is the hot-path shortcut for managedFields on an
// update: when the object has one Update entry, owned by the same manager,
// and the update only modifies fields that entry already owns (a lease
// renewal moving renewTime), the full structured-merge-diff computation
// would return the same entry with a new timestamp. It sets that result on
// obj and returns true; otherwise it changes nothing and returns false.
//
// The equivalence with managedfields.FieldManager is checked by
// TestRenewalManagedFieldsMatchesFieldManager.
func (s *Server) renewalManagedFields(res *registry.Resource, subresource string, live, obj runtime.Object, manager string) bool {
	if res.ChangedFields == nil || subresource != "" {
		return false
	}
	liveMeta, err1 := objectMeta(live)
	newMeta, err2 := objectMeta(obj)
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
		sameBoolPtr(x.Controller, y.Controller) && sameBoolPtr(x.BlockOwnerDeletion, y.BlockOwnerDeletion)
}

func sameBoolPtr(x, y *bool) bool {
	return (x == nil && y == nil) || (x != nil && y != nil && *x == *y)
}

func sameManagedFields(a, b []metav1.ManagedFieldsEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Manager != y.Manager || x.Operation != y.Operation || x.APIVersion != y.APIVersion ||
			x.Subresource != y.Subresource || x.FieldsType != y.FieldsType || (x.Time == nil) != (y.Time == nil) ||
			(x.Time != nil && !x.Time.Equal(y.Time)) || (x.FieldsV1 == nil) != (y.FieldsV1 == nil) ||
			(x.FieldsV1 != nil && !bytes.Equal(x.FieldsV1.GetRawBytes(), y.FieldsV1.GetRawBytes())) {
			return false
		}
	}
	return true
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
