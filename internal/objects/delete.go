package objects

import (
	"context"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/admission"
	"github.com/leasehold/leasehold/internal/registry"
)

// delete.go is what a delete means: preconditions, finalizers (the
// object is kept, marked deleting, until they are gone), admission and the
// conditional delete.

// Delete deletes one object. done=false means finalizers keep it, and
// obj is its updated state with deletionTimestamp set.
func (s *Store) Delete(ctx context.Context, res *registry.Resource, namespace, name string, opts metav1.DeleteOptions) (runtime.Object, bool, error) {
	key := res.Key(namespace, name)
	dryRun := len(opts.DryRun) > 0
	for attempt := 0; ; attempt++ {
		cur, err := s.Current(ctx, res, key, -1)
		if err != nil {
			return nil, false, err
		}
		if cur == nil {
			return nil, false, apierrors.NewNotFound(res.GroupResource(), name)
		}
		acc, err := meta.Accessor(cur)
		if err != nil {
			return nil, false, err
		}
		if p := opts.Preconditions; p != nil {
			if p.UID != nil && *p.UID != acc.GetUID() {
				//lint:ignore ST1005 the wire-visible Kubernetes message starts with a capital
				return nil, false, apierrors.NewConflict(res.GroupResource(), name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, acc.GetUID()))
			}
			if p.ResourceVersion != nil && *p.ResourceVersion != acc.GetResourceVersion() {
				//lint:ignore ST1005 the wire-visible Kubernetes message starts with a capital
				return nil, false, apierrors.NewConflict(res.GroupResource(), name, fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, acc.GetResourceVersion()))
			}
		}
		if err := s.admit(ctx, admission.Delete, namespace, name, nil, cur, dryRun); err != nil {
			return nil, false, err
		}
		rev, _ := ParseResourceVersion(acc.GetResourceVersion())
		finalizers := deletionFinalizers(acc.GetFinalizers(), opts.PropagationPolicy)
		if res.PrepareForDelete != nil {
			// The kind may keep the object while it is emptied (a
			// namespace goes Terminating), even with no finalizers.
			obj := cur.DeepCopyObject()
			keep, err := res.PrepareForDelete(obj)
			if err != nil {
				return nil, false, err
			}
			if keep {
				out, err := s.markDeleting(ctx, res, key, obj, finalizers, dryRun)
				if apierrors.IsConflict(err) && attempt < MaxRetries {
					continue
				}
				return out, false, err
			}
		}
		if len(finalizers) > 0 {
			obj, err := s.markDeleting(ctx, res, key, cur, finalizers, dryRun)
			if apierrors.IsConflict(err) && attempt < MaxRetries {
				continue
			}
			return obj, false, err
		}
		if dryRun {
			return cur, true, nil
		}
		// cur is the watch cache's shared object; finishDelete stamps the
		// deletion's resourceVersion on what it is given.
		obj, err := s.finishDelete(ctx, res, key, rev, cur.DeepCopyObject())
		// A write got in between: read again, and check the preconditions
		// on what is there now (kube-apiserver's conditional delete does
		// the same, for as long as it takes), so a uid precondition that
		// still holds succeeds however busy the object's writers are.
		if apierrors.IsConflict(err) && attempt < maxDeleteRetries && ctx.Err() == nil {
			continue
		}
		return obj, err == nil, err
	}
}

// maxDeleteRetries bounds how often a delete reads the object again after a
// write got in between; kube-apiserver's has no bound but the request's
// deadline. Each retry reads the store, so only writers that win every
// race can exhaust it.
const maxDeleteRetries = 100

// deletionFinalizers returns the finalizers the object must carry while it
// is being deleted with the given propagation policy.
func deletionFinalizers(existing []string, policy *metav1.DeletionPropagation) []string {
	out := append([]string(nil), existing...)
	has := func(f string) bool {
		for _, x := range out {
			if x == f {
				return true
			}
		}
		return false
	}
	if policy != nil {
		var add, drop string
		switch *policy {
		case metav1.DeletePropagationOrphan:
			add, drop = metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents
		case metav1.DeletePropagationForeground:
			add, drop = metav1.FinalizerDeleteDependents, metav1.FinalizerOrphanDependents
		}
		if add != "" {
			kept := out[:0]
			for _, f := range out {
				if f != drop {
					kept = append(kept, f)
				}
			}
			out = kept
			if !has(add) {
				out = append(out, add)
			}
		}
	}
	return out
}

// markDeleting sets deletionTimestamp and the finalizers (possibly none:
// the kind's PrepareForDelete keeps the object) on cur.
func (s *Store) markDeleting(ctx context.Context, res *registry.Resource, key string, cur runtime.Object, finalizers []string, dryRun bool) (runtime.Object, error) {
	obj := cur.DeepCopyObject()
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if acc.GetDeletionTimestamp() == nil {
		now := metav1.NewTime(s.now().Truncate(1e9))
		acc.SetDeletionTimestamp(&now)
		zero := int64(0)
		acc.SetDeletionGracePeriodSeconds(&zero)
	}
	acc.SetFinalizers(finalizers)
	expected, err := ParseResourceVersion(acc.GetResourceVersion())
	if err != nil {
		return nil, err
	}
	if dryRun {
		return obj, nil
	}
	acc.SetResourceVersion("")
	value, err := s.form.Encode(obj)
	if err != nil {
		return nil, err
	}
	rev, err := s.storage.Update(ctx, key, expected, value)
	if err != nil {
		return nil, StorageError(res, acc.GetName(), key, err)
	}
	acc.SetResourceVersion(strconv.FormatInt(rev, 10))
	return obj, nil
}

// finishDelete removes the object from storage if it is still at revision rev.
func (s *Store) finishDelete(ctx context.Context, res *registry.Resource, key string, rev int64, obj runtime.Object) (runtime.Object, error) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	_, delRev, err := s.storage.Delete(ctx, key, rev)
	if err != nil {
		return nil, StorageError(res, acc.GetName(), key, err)
	}
	acc.SetResourceVersion(strconv.FormatInt(delRev, 10))
	return obj, nil
}
