package objects

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/leasehold/leasehold/internal/admission"
	"github.com/leasehold/leasehold/internal/registry"
)

// update.go is what an update means: the preconditions (uid,
// resourceVersion), the object kept when the client sends none, the
// server-owned metadata, validation, managed fields, admission and the
// conditional write with its hand-off to the watch cache.

// uidPreconditionFailed is the 409 kube-apiserver's etcd3 store gives a PUT
// whose body uid does not match the stored object (or there is none).
func uidPreconditionFailed(res *registry.Resource, key, name, want, have string) error {
	return apierrors.NewConflict(res.GroupResource(), name, fmt.Errorf(
		"StorageError: invalid object, Code: 4, Key: %s, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: %s, UID in object meta: %s", key, want, have))
}

// Get returns the object namespace/name at least as new as minRV (see
// Current), or the 404.
func (s *Store) Get(ctx context.Context, res *registry.Resource, namespace, name string, minRV int64) (runtime.Object, error) {
	obj, err := s.Current(ctx, res, res.Key(namespace, name), minRV)
	if err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, apierrors.NewNotFound(res.GroupResource(), name)
	}
	return obj, nil
}

// Update replaces the stored object namespace/name (or its subresource)
// with obj (a PUT), creating it when the resource allows create-on-update.
// obj is owned by the caller. A conditional update also returns the storage
// encoding of what it wrote (see UpdateFrom).
func (s *Store) Update(ctx context.Context, res *registry.Resource, namespace, name, subresource string, obj runtime.Object, wo WriteOptions) (runtime.Object, []byte, bool, error) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil, false, err
	}
	key := res.Key(namespace, name)
	// The uid the request carries: UpdateFrom fills in the stored one when
	// it carries none.
	reqUID := string(acc.GetUID())
	reqRV, err := ParseResourceVersion(acc.GetResourceVersion())
	if err != nil {
		return nil, nil, false, err
	}
	// The cache must be at least as new as what the client saw, or a fresh
	// renewal would look stale; a resourceVersion the store has not
	// reached reads the store's newest state, which the precondition
	// (updateFrom) then finds stale.
	minRV := reqRV
	if minRV == 0 {
		minRV = -1
	}
	cur, err := s.current(ctx, res, key, minRV, false)
	if err != nil {
		return nil, nil, false, err
	}
	if cur == nil {
		return s.updateMissing(ctx, res, namespace, name, subresource, key, reqUID, obj, wo)
	}
	old, err := meta.Accessor(cur)
	if err != nil {
		return nil, nil, false, err
	}
	if reqUID != "" && reqUID != string(old.GetUID()) {
		return nil, nil, false, uidPreconditionFailed(res, key, name, reqUID, string(old.GetUID()))
	}
	if reqRV == 0 {
		if !res.AllowUnconditionalUpdate {
			return nil, nil, false, apierrors.NewInvalid(kindFor(res), name, field.ErrorList{
				field.Invalid(field.NewPath("metadata", "resourceVersion"), int64(0), "must be specified for an update")})
		}
		out, err := s.unconditionalUpdate(ctx, res, namespace, name, subresource, obj, wo)
		return out, nil, false, err
	}
	curRV, err := ParseResourceVersion(old.GetResourceVersion())
	if err != nil {
		return nil, nil, false, err
	}
	out, stored, err := s.updateFrom(ctx, res, key, subresource, cur, curRV, reqRV, obj, wo)
	if errors.Is(err, errStale) {
		// The object is not at reqRV: it changed since the client read it
		// (or reqRV is a revision the store has not reached), a conflict,
		// unless the store no longer has it (the cache has yet to see the
		// delete). kube-apiserver then re-reads etcd, as when
		// any cached state fails an update, and the PUT finds no object:
		// created where the kind allows it, else 404. obj is as the
		// client sent it: the precondition fails before anything changes it.
		fresh, err := s.stored(ctx, res, key)
		if err != nil {
			return nil, nil, false, err
		}
		if fresh == nil {
			return s.updateMissing(ctx, res, namespace, name, subresource, key, reqUID, obj, wo)
		}
		return nil, nil, false, Conflict(res, name)
	}
	if reqUID != "" && isNotFoundOf(err, res, name) {
		// The cache still held an object the store no longer has (deleted
		// a moment ago): a uid precondition fails as it would have with a
		// fresh cache, as kube-apiserver's update re-reads etcd when its
		// cached state proves stale. (Without a uid the answer stays the
		// store's 404, even for a kind that PUT may create: obj has been
		// prepared as an update of the stale object by now, and a create
		// racing the delete can be retried.)
		return nil, nil, false, uidPreconditionFailed(res, key, name, reqUID, "")
	}
	return out, stored, false, err
}

// updateMissing answers an update of an object the cache does not have: a
// uid precondition fails (409), a kind that allows it is created, anything
// else is 404.
func (s *Store) updateMissing(ctx context.Context, res *registry.Resource, namespace, name, subresource, key, reqUID string, obj runtime.Object, wo WriteOptions) (runtime.Object, []byte, bool, error) {
	if reqUID != "" {
		return nil, nil, false, uidPreconditionFailed(res, key, name, reqUID, "")
	}
	if !res.AllowCreateOnUpdate || subresource != "" {
		return nil, nil, false, apierrors.NewNotFound(res.GroupResource(), name)
	}
	created, err := s.Create(ctx, res, namespace, obj, wo)
	return created, nil, err == nil, err
}

// isNotFoundOf tells whether err is the 404 of res's object name.
func isNotFoundOf(err error, res *registry.Resource, name string) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) || !apierrors.IsNotFound(err) {
		return false
	}
	d := st.Status().Details
	return d != nil && d.Name == name && d.Kind == res.GroupResource().Resource && d.Group == res.GroupResource().Group
}

// GuaranteedUpdate updates namespace/name (or its subresource) from its
// current state, again from a fresh read when another writer gets in
// between, at most MaxRetries times: an update without a resourceVersion
// (for resources that allow it: nodes, events, namespaces) and a patch.
// tryUpdate turns the current object (the cache's, shared: never change
// it) into the object to write; after a conflict, mayRetry (nil: always)
// says whether to try again, and a patch that carried its own
// resourceVersion says no. A missing object is 404.
func (s *Store) GuaranteedUpdate(ctx context.Context, res *registry.Resource, namespace, name, subresource string, wo WriteOptions, tryUpdate func(cur runtime.Object) (runtime.Object, error), mayRetry func(cur runtime.Object) bool) (runtime.Object, error) {
	key := res.Key(namespace, name)
	var lastErr error
	for attempt := 0; attempt < MaxRetries; attempt++ {
		cur, err := s.Current(ctx, res, key, -1)
		if err != nil {
			return nil, err
		}
		if cur == nil {
			return nil, apierrors.NewNotFound(res.GroupResource(), name)
		}
		obj, err := tryUpdate(cur)
		if err != nil {
			return nil, err
		}
		out, _, err := s.UpdateFrom(ctx, res, key, subresource, cur, obj, wo)
		if !apierrors.IsConflict(err) || (mayRetry != nil && !mayRetry(cur)) {
			return out, err
		}
		lastErr = err
	}
	return nil, lastErr
}

// unconditionalUpdate writes obj over whatever is stored, as
// kube-apiserver does for resources that allow updates without a
// resourceVersion.
func (s *Store) unconditionalUpdate(ctx context.Context, res *registry.Resource, namespace, name, subresource string, obj runtime.Object, wo WriteOptions) (runtime.Object, error) {
	return s.GuaranteedUpdate(ctx, res, namespace, name, subresource, wo, func(cur runtime.Object) (runtime.Object, error) {
		next := obj.DeepCopyObject()
		acc, err := meta.Accessor(next)
		if err != nil {
			return nil, err
		}
		acc.SetResourceVersion(ResourceVersionOf(cur))
		return next, nil
	}, nil)
}

// UpdateFrom finishes an update of cur (the stored object) to obj: it keeps
// server-owned metadata, validates, records managed fields and writes with
// cur's revision as the precondition. When it stored obj, it also returns
// obj's storage encoding, which has an empty resourceVersion and is
// shared with the store: read it, never change it.
//
// obj's resourceVersion, if it has one (a patch may set it), is the
// precondition: cur's, or the 409.
func (s *Store) UpdateFrom(ctx context.Context, res *registry.Resource, key, subresource string, cur, obj runtime.Object, wo WriteOptions) (runtime.Object, []byte, error) {
	curRV, err := ParseResourceVersion(ResourceVersionOf(cur))
	if err != nil {
		return nil, nil, err
	}
	var reqRV int64
	if rv := ResourceVersionOf(obj); rv != "" {
		if reqRV, err = ParseResourceVersion(rv); err != nil || reqRV == 0 {
			// Not a revision cur can be at: the stale version's 409.
			reqRV = -1
		}
	}
	out, stored, err := s.updateFrom(ctx, res, key, subresource, cur, curRV, reqRV, obj, wo)
	if errors.Is(err, errStale) {
		acc, aerr := meta.Accessor(obj)
		if aerr != nil {
			return nil, nil, aerr
		}
		return nil, nil, Conflict(res, acc.GetName())
	}
	return out, stored, err
}

// errStale is updateFrom's failed resourceVersion precondition, which its
// callers answer: Update first reads the store, in case the cache still
// holds an object deleted behind it.
var errStale = errors.New("the object's resourceVersion is not the stored one")

// updateFrom is UpdateFrom given cur's revision, curRV, which the write
// expects the key to be at, and the one the request names, reqRV (0: none,
// the write starts from cur whatever its revision; < 0: none cur can be at).
func (s *Store) updateFrom(ctx context.Context, res *registry.Resource, key, subresource string, cur runtime.Object, curRV, reqRV int64, obj runtime.Object, wo WriteOptions) (runtime.Object, []byte, error) {
	// The resourceVersion precondition, where kube-apiserver's
	// registry Store.Update makes it: inside the guaranteed update's
	// tryUpdate, after the uid precondition and the "must be specified"
	// 422, before PrepareForUpdate, validation and admission, so a stale
	// write is a 409 whatever else is wrong with it. It is the client's
	// check: has the object changed since I read it? The store's
	// conditional write below (curRV) is the other, as etcd's
	// ModRevision compare is in kube: has another writer got in between
	// this read and this write? Neither replaces the other: without the
	// first, a stale PUT would overwrite a newer cached object; without
	// the second, two writers reading the same revision would both win.
	if reqRV != 0 && reqRV != curRV {
		return nil, nil, errStale
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil, err
	}
	old, err := meta.Accessor(cur)
	if err != nil {
		return nil, nil, err
	}
	// Fields clients may not change on update keep their stored values, as
	// rest.BeforeUpdate does; the immutable ones are validated below.
	if acc.GetUID() == "" {
		acc.SetUID(old.GetUID())
	}
	if ts := acc.GetCreationTimestamp(); ts.IsZero() {
		acc.SetCreationTimestamp(old.GetCreationTimestamp())
	}
	acc.SetDeletionTimestamp(old.GetDeletionTimestamp())
	acc.SetDeletionGracePeriodSeconds(old.GetDeletionGracePeriodSeconds())
	acc.SetGeneration(old.GetGeneration())
	acc.SetSelfLink("")
	if res.PrepareForUpdate != nil {
		res.PrepareForUpdate(obj, cur, subresource)
	}
	if errs := validateUpdate(res, obj, cur); len(errs) > 0 {
		return nil, nil, apierrors.NewInvalid(kindFor(res), acc.GetName(), errs)
	}
	if !wo.ManagedFieldsDone {
		if obj, err = s.updateManagedFields(res, subresource, cur, obj, wo.FieldManager); err != nil {
			return nil, nil, err
		}
		if acc, err = meta.Accessor(obj); err != nil {
			return nil, nil, err
		}
	}
	if err := s.admit(ctx, admission.Update, acc.GetNamespace(), acc.GetName(), obj, cur, wo.DryRun); err != nil {
		return nil, nil, err
	}
	acc.SetResourceVersion("")
	value, err := s.form.Encode(obj)
	if err != nil {
		return nil, nil, err
	}
	if wo.DryRun {
		acc.SetResourceVersion(old.GetResourceVersion())
		return obj, nil, nil
	}
	if acc.GetDeletionTimestamp() != nil && len(acc.GetFinalizers()) == 0 && (res.FinalizersDone == nil || res.FinalizersDone(obj)) {
		// The last finalizer is gone (the kind's own too: a terminating
		// namespace's status update must not delete it before its content
		// is): the pending deletion completes now.
		out, err := s.finishDelete(ctx, res, key, curRV, obj)
		return out, nil, err
	}
	var rev int64
	if res.HandOffUpdates && s.intern != nil && s.cache != nil {
		// The written object goes to the watch cache as it is (Expect), so
		// it is interned here as the cache's decoder would have. The
		// answer is a shallow copy taken first: the cache sets the
		// resourceVersion of the object it takes over, and nothing else in
		// it changes again.
		like := cur
		if wo.SharesWith != nil {
			like = wo.SharesWith
		}
		s.intern.ObjectLike(obj, like)
		handed := obj
		if obj, acc, err = shallowCopy(obj); err != nil {
			return nil, nil, err
		}
		token := s.cache.Expect(key, value, handed)
		if rev, err = s.storage.Update(ctx, key, curRV, value); err != nil {
			s.cache.Withdraw(key, token)
		}
	} else {
		rev, err = s.storage.Update(ctx, key, curRV, value)
	}
	if err != nil {
		return nil, nil, StorageError(res, acc.GetName(), key, err)
	}
	acc.SetResourceVersion(strconv.FormatInt(rev, 10))
	return obj, value, nil
}

// shallowCopy returns a new object whose top-level struct is a copy of
// obj's, sharing everything it points to, and its metadata accessor.
func shallowCopy(obj runtime.Object) (runtime.Object, metav1.Object, error) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return nil, nil, fmt.Errorf("copying %T: not a pointer to an object", obj)
	}
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	out, ok := c.Interface().(runtime.Object)
	if !ok {
		return nil, nil, fmt.Errorf("copying %T: not an object", obj)
	}
	acc, err := meta.Accessor(out)
	return out, acc, err
}
