package objects

// deletecollection.go is what a deletecollection means: a delete of every
// object a consistent read of the watch cache selects, each with the same
// options, as kube-apiserver's Store.DeleteCollection deletes the items of
// a list.

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/registry"
)

// DeleteCollection deletes res's objects in namespace that sel selects,
// each as Delete does with opts, and returns the typed list of what it
// deleted (or, for objects finalizers hold, marked for deletion), at the
// newest revision it saw. An object another client deleted first is
// skipped.
func (s *Store) DeleteCollection(ctx context.Context, res *registry.Resource, namespace string, sel Selector, opts metav1.DeleteOptions) (runtime.Object, error) {
	if err := s.WaitFresh(ctx, -1); err != nil {
		return nil, err
	}
	items, rev := s.cache.List(res.KeyPrefix(namespace), sel.matcher())
	var deleted []runtime.Object
	for _, item := range items {
		acc, err := meta.Accessor(item)
		if err != nil {
			return nil, err
		}
		obj, _, err := s.Delete(ctx, res, acc.GetNamespace(), acc.GetName(), opts)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		deleted = append(deleted, obj)
		if delRV, _ := ParseResourceVersion(ResourceVersionOf(obj)); delRV > rev {
			rev = delRV
		}
	}
	return newList(res, deleted, rev, "")
}
