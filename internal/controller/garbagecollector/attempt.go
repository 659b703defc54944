package garbagecollector

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/leasehold/leasehold/internal/registry"
)

// process handles one key from the queue by looking at its current state:
// an owner being deleted with the orphan or foregroundDeletion finalizer has
// its dependents dealt with; any other object with owners has them verified.
func (gc *GarbageCollector) process(ctx context.Context, key string) error {
	res, ok := gc.res.forKey(key)
	if !ok {
		return nil
	}
	obj, ok := gc.cache.Get(key)
	if !ok {
		return nil
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Errorf("reading metadata of %s: %w", key, err)
	}
	if acc.GetDeletionTimestamp() != nil {
		switch {
		case hasFinalizer(acc, metav1.FinalizerOrphanDependents):
			return gc.orphanDependents(ctx, res, key, acc)
		case hasFinalizer(acc, metav1.FinalizerDeleteDependents):
			return gc.deleteDependents(ctx, res, key, acc)
		}
		// Already on its way out: nothing for the GC to decide.
		return nil
	}
	if len(acc.GetOwnerReferences()) == 0 {
		return nil
	}
	return gc.attemptToDelete(ctx, res, key, acc)
}

// ownerState is what verification found an owner reference to be.
type ownerState int

const (
	// solid: the owner exists with the referenced uid (or cannot be checked).
	solid ownerState = iota
	// dangling: no object of that kind and name, or one with another uid.
	dangling
	// waiting: the owner exists and is being deleted in the foreground.
	waiting
)

// attemptToDelete verifies every owner of dep and deletes dep if all are
// dangling or waiting for their dependents, or patches the references to
// gone owners away if at least one owner is solid.
func (gc *GarbageCollector) attemptToDelete(ctx context.Context, res *registry.Resource, key string, dep metav1.Object) error {
	refs := dep.GetOwnerReferences()
	var nSolid int
	var gone []string // why each dangling or waiting reference is not solid
	drop := map[types.UID]bool{}
	var waitingRefs []metav1.OwnerReference
	for _, ref := range refs {
		st, why, err := gc.verifyOwner(ctx, res, dep, ref)
		if err != nil {
			return err
		}
		switch st {
		case solid:
			nSolid++
		case dangling:
			drop[ref.UID] = true
			gone = append(gone, describeRef(ref)+": "+why)
		case waiting:
			drop[ref.UID] = true
			waitingRefs = append(waitingRefs, ref)
			gone = append(gone, describeRef(ref)+": being deleted in the foreground")
		}
	}
	switch {
	case len(drop) == 0:
		return nil
	case nSolid > 0:
		var keep []metav1.OwnerReference
		for _, ref := range refs {
			if !drop[ref.UID] {
				keep = append(keep, ref)
			}
		}
		gc.log.Info("removing references to gone owners; another owner keeps the object",
			"resource", res.GroupResource().String(), "namespace", dep.GetNamespace(), "name", dep.GetName(), "uid", dep.GetUID(), "removed", gone)
		return gc.patchOwnerRefs(ctx, res, dep, keep)
	case len(waitingRefs) > 0 && gc.graph.hasDependents(key, dep.GetUID()):
		// dep has dependents of its own: delete it in the foreground too,
		// so its owner keeps waiting until the whole subtree is gone.
		if err := gc.unblockIfCycle(ctx, res, key, dep, refs); err != nil {
			return err
		}
		return gc.deleteObject(ctx, res, dep, metav1.DeletePropagationForeground, gone)
	default:
		policy := metav1.DeletePropagationBackground
		switch {
		case hasFinalizer(dep, metav1.FinalizerOrphanDependents):
			policy = metav1.DeletePropagationOrphan
		case hasFinalizer(dep, metav1.FinalizerDeleteDependents):
			policy = metav1.DeletePropagationForeground
		}
		return gc.deleteObject(ctx, res, dep, policy, gone)
	}
}

// verifyOwner resolves ref by kind and name, then checks its uid: from the
// cache when it shows the referenced owner, else with a consistent loopback
// GET, so an owner the cache has not caught up with is never taken for gone.
func (gc *GarbageCollector) verifyOwner(ctx context.Context, res *registry.Resource, dep metav1.Object, ref metav1.OwnerReference) (ownerState, string, error) {
	ownerRes, key, resolved, invalid := gc.res.ownerKey(ref, res.Namespaced, dep.GetNamespace())
	if invalid {
		// Kubernetes treats it as unresolvable: the object is never collected.
		gc.warnInvalidNamespace(ctx, res, dep, ref)
		return solid, "", nil
	}
	if !resolved {
		gc.log.Debug("owner kind is not served; keeping the reference",
			"resource", res.GroupResource().String(), "namespace", dep.GetNamespace(), "name", dep.GetName(), "owner", describeRef(ref))
		return solid, "", nil
	}
	if obj, ok := gc.cache.Get(key); ok {
		if acc, err := meta.Accessor(obj); err == nil && acc.GetUID() == ref.UID {
			return stateOf(acc), "", nil
		}
	}
	ns := ""
	if ownerRes.Namespaced {
		ns = dep.GetNamespace()
	}
	m, err := gc.w.get(ctx, ownerRes, ns, ref.Name)
	switch {
	case apierrors.IsNotFound(err):
		if ownerRes.Namespaced {
			gc.checkCrossNamespace(ctx, res, dep, ref)
		}
		return dangling, "not found", nil
	case err != nil:
		return solid, "", fmt.Errorf("verifying owner %s of %s %s/%s: %w", describeRef(ref), res.GroupResource(), dep.GetNamespace(), dep.GetName(), err)
	case m.UID != ref.UID:
		return dangling, fmt.Sprintf("uid mismatch (found %s)", m.UID), nil
	}
	return stateOf(m), "", nil
}

func stateOf(owner metav1.Object) ownerState {
	if isDeletingDependents(owner) {
		return waiting
	}
	return solid
}

// deleteObject deletes dep with a uid precondition: if the name now holds a
// new object, the delete fails and that object is judged on its own.
func (gc *GarbageCollector) deleteObject(ctx context.Context, res *registry.Resource, dep metav1.Object, policy metav1.DeletionPropagation, why []string) error {
	gc.log.Info("deleting object whose owners are all gone",
		"resource", res.GroupResource().String(), "namespace", dep.GetNamespace(), "name", dep.GetName(), "uid", dep.GetUID(),
		"propagationPolicy", string(policy), "owners", why)
	err := gc.w.delete(ctx, res, dep.GetNamespace(), dep.GetName(), dep.GetUID(), policy)
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return fmt.Errorf("deleting %s %s/%s: %w", res.GroupResource(), dep.GetNamespace(), dep.GetName(), err)
}

// patchOwnerRefs sets dep's ownerReferences to keep, conditional on dep's
// resourceVersion.
func (gc *GarbageCollector) patchOwnerRefs(ctx context.Context, res *registry.Resource, dep metav1.Object, keep []metav1.OwnerReference) error {
	var p metadataPatch
	p.Metadata.ResourceVersion = dep.GetResourceVersion()
	p.Metadata.OwnerReferences = nullable(keep)
	err := gc.w.patchMetadata(ctx, res, dep.GetNamespace(), dep.GetName(), &p)
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("patching ownerReferences of %s %s/%s: %w", res.GroupResource(), dep.GetNamespace(), dep.GetName(), err)
}

// unblockIfCycle breaks a foreground-deletion cycle (dep waits for an owner
// that waits for dep): when one of dep's own dependents is itself waiting for
// its dependents, dep's references stop blocking their owners.
func (gc *GarbageCollector) unblockIfCycle(ctx context.Context, res *registry.Resource, key string, dep metav1.Object, refs []metav1.OwnerReference) error {
	cycle := false
	for d, uid := range gc.graph.dependentsOf(key) {
		if uid == dep.GetUID() && gc.graph.deletingDependents(d) {
			cycle = true
			break
		}
	}
	if !cycle {
		return nil
	}
	changed := false
	out := make([]metav1.OwnerReference, len(refs))
	for i, ref := range refs {
		out[i] = *ref.DeepCopy()
		if ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
			f := false
			out[i].BlockOwnerDeletion = &f
			changed = true
		}
	}
	if !changed {
		return nil
	}
	gc.log.Info("unblocking owners to avoid a foreground-deletion cycle",
		"resource", res.GroupResource().String(), "namespace", dep.GetNamespace(), "name", dep.GetName())
	return gc.patchOwnerRefs(ctx, res, dep, out)
}

// describeRef names an owner reference in logs and messages.
func describeRef(ref metav1.OwnerReference) string {
	return fmt.Sprintf("%s/%s %s (uid %s)", ref.APIVersion, ref.Kind, ref.Name, ref.UID)
}
