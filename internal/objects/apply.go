package objects

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/registry"
)

// Apply is server-side apply: apimachinery's field manager merges the
// applied configuration (already checked against the URL: its kind and
// name) into the live object, tracks ownership and creates the object when
// there is none; a conflict is retried from a fresh read unless the applied
// configuration carries its own resourceVersion. It reports whether it
// created the object. The resource must have a field manager
// (FieldManager).
func (s *Store) Apply(ctx context.Context, res *registry.Resource, namespace, name, subresource string, applied *unstructured.Unstructured, force bool, wo WriteOptions) (runtime.Object, bool, error) {
	fm := s.FieldManager(res, subresource)
	if fm == nil {
		return nil, false, apierrors.NewBadRequest("server-side apply is not available: no type information")
	}
	key := res.Key(namespace, name)
	wo.ManagedFieldsDone = true
	var lastErr error
	for attempt := 0; attempt < MaxRetries; attempt++ {
		cur, err := s.Current(ctx, res, key, -1)
		if err != nil {
			return nil, false, err
		}
		live := cur
		if live == nil {
			if subresource != "" {
				return nil, false, apierrors.NewNotFound(res.GroupResource(), name)
			}
			live = res.New()
			live.GetObjectKind().SetGroupVersionKind(res.GroupVersionKind())
		} else {
			live = live.DeepCopyObject()
		}
		out, err := fm.Apply(live, applied, wo.FieldManager, force)
		if err != nil {
			var st apierrors.APIStatus
			if errors.As(err, &st) {
				return nil, false, err
			}
			// The applied configuration does not fit the schema (an unknown
			// field, a wrong type): the client's fault, so a 400, not a 500.
			return nil, false, apierrors.NewBadRequest(err.Error())
		}
		out.GetObjectKind().SetGroupVersionKind(res.GroupVersionKind())
		if cur == nil {
			created, err := s.Create(ctx, res, namespace, out, wo)
			if apierrors.IsAlreadyExists(err) {
				lastErr = err
				continue
			}
			return created, err == nil, err
		}
		if acc, err := meta.Accessor(out); err == nil && applied.GetResourceVersion() == "" {
			// The applied configuration carries no precondition: write
			// against the state the merge was computed from.
			curAcc, _ := meta.Accessor(cur)
			acc.SetResourceVersion(curAcc.GetResourceVersion())
		}
		updated, _, err := s.UpdateFrom(ctx, res, key, subresource, cur, out, wo)
		if err == nil {
			return updated, false, nil
		}
		if !apierrors.IsConflict(err) || applied.GetResourceVersion() != "" {
			return nil, false, err
		}
		lastErr = err
	}
	return nil, false, lastErr
}
