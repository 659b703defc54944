package rbacescalation

import (
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// onlyGCFieldsChange reports whether obj differs from old in nothing but
// the fields the garbage collector writes (ownerReferences, finalizers), as
// Kubernetes' IsOnlyMutatingGCFields; such an update grants nothing new, so
// the collector need not hold the rules of every role it touches.
// managedFields (and the obsolete selfLink) are set aside too: they record
// who wrote what, grant nothing, and may already have been stamped by the
// server when admission runs.
func onlyGCFieldsChange(obj, old runtime.Object) bool {
	copied := obj.DeepCopyObject()
	copiedMeta, err := meta.Accessor(copied)
	if err != nil {
		return false
	}
	oldMeta, err := meta.Accessor(old)
	if err != nil {
		return false
	}
	copiedMeta.SetOwnerReferences(oldMeta.GetOwnerReferences())
	copiedMeta.SetFinalizers(oldMeta.GetFinalizers())
	copiedMeta.SetSelfLink(oldMeta.GetSelfLink())
	copiedMeta.SetManagedFields(oldMeta.GetManagedFields())
	return apiequality.Semantic.DeepEqual(copied, old)
}
