package garbagecollector

import (
	"context"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/registry"
)

// graphCaughtUp tells whether the graph reflects the cache at least up to
// owner's own revision: only then does it know every dependent that existed
// when owner's deletion began. If not, the event loop enqueues owner again
// when it reaches that revision.
func (gc *GarbageCollector) graphCaughtUp(owner metav1.Object) bool {
	rv, err := strconv.ParseInt(owner.GetResourceVersion(), 10, 64)
	return err == nil && gc.graph.revision() >= rv
}

// dependentRefs returns the references of the object at key that point at
// owner's uid, and the object (nil when it is gone).
func (gc *GarbageCollector) dependentRefs(key string, owner metav1.Object) (metav1.Object, []metav1.OwnerReference) {
	obj, ok := gc.cache.Get(key)
	if !ok {
		return nil, nil
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil
	}
	var refs []metav1.OwnerReference
	for _, ref := range acc.GetOwnerReferences() {
		if ref.UID == owner.GetUID() {
			refs = append(refs, ref)
		}
	}
	return acc, refs
}

// deleteDependents carries out a Foreground deletion of owner: its
// dependents are queued for deletion (they see owner as waiting), and once
// none whose reference has blockOwnerDeletion=true remains, the
// foregroundDeletion finalizer is removed and the API server deletes owner.
func (gc *GarbageCollector) deleteDependents(ctx context.Context, res *registry.Resource, key string, owner metav1.Object) error {
	if !gc.graphCaughtUp(owner) {
		return nil
	}
	var blocking []string
	for depKey := range gc.graph.dependentsOf(key) {
		dep, refs := gc.dependentRefs(depKey, owner)
		if len(refs) == 0 {
			continue
		}
		for _, ref := range refs {
			if ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
				blocking = append(blocking, depKey)
				break
			}
		}
		if dep.GetDeletionTimestamp() == nil {
			gc.queue.Add(depKey)
		}
	}
	if len(blocking) > 0 {
		gc.log.Debug("foreground deletion waits for blocking dependents",
			"resource", res.GroupResource().String(), "namespace", owner.GetNamespace(), "name", owner.GetName(), "blocking", blocking)
		return nil
	}
	gc.log.Info("no blocking dependents left; completing foreground deletion",
		"resource", res.GroupResource().String(), "namespace", owner.GetNamespace(), "name", owner.GetName(), "uid", owner.GetUID())
	return gc.removeFinalizer(ctx, res, owner, metav1.FinalizerDeleteDependents)
}

// orphanDependents carries out an Orphan deletion of owner: its reference is
// removed from every dependent, then the orphan finalizer from owner.
func (gc *GarbageCollector) orphanDependents(ctx context.Context, res *registry.Resource, key string, owner metav1.Object) error {
	if !gc.graphCaughtUp(owner) {
		return nil
	}
	for depKey := range gc.graph.dependentsOf(key) {
		dep, refs := gc.dependentRefs(depKey, owner)
		if len(refs) == 0 {
			continue
		}
		depRes, ok := gc.res.forKey(depKey)
		if !ok {
			continue
		}
		var keep []metav1.OwnerReference
		for _, ref := range dep.GetOwnerReferences() {
			if ref.UID != owner.GetUID() {
				keep = append(keep, ref)
			}
		}
		gc.log.Info("orphaning dependent",
			"resource", depRes.GroupResource().String(), "namespace", dep.GetNamespace(), "name", dep.GetName(),
			"owner", res.GroupResource().String()+" "+owner.GetName(), "ownerUID", owner.GetUID())
		if err := gc.patchOwnerRefs(ctx, depRes, dep, keep); err != nil {
			return err
		}
	}
	return gc.removeFinalizer(ctx, res, owner, metav1.FinalizerOrphanDependents)
}

// removeFinalizer removes finalizer f from obj, conditional on obj's
// resourceVersion. When it was the last one, the API server completes the
// pending deletion.
func (gc *GarbageCollector) removeFinalizer(ctx context.Context, res *registry.Resource, obj metav1.Object, f string) error {
	var keep []string
	for _, x := range obj.GetFinalizers() {
		if x != f {
			keep = append(keep, x)
		}
	}
	var p metadataPatch
	p.Metadata.ResourceVersion = obj.GetResourceVersion()
	p.Metadata.Finalizers = nullable(keep)
	err := gc.w.patchMetadata(ctx, res, obj.GetNamespace(), obj.GetName(), &p)
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("removing finalizer %s from %s %s/%s: %w", f, res.GroupResource(), obj.GetNamespace(), obj.GetName(), err)
}
