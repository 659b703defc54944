package objects

import (
	"context"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/leasehold/leasehold/internal/admission"
	"github.com/leasehold/leasehold/internal/registry"
)

// create.go is what a create means: a generated name, the namespace that
// must exist, server-owned metadata, validation, managed fields, admission
// and the write that fails when the key exists.

// Create validates, prepares and stores a new object; obj is owned by
// the caller and is modified.
func (s *Store) Create(ctx context.Context, res *registry.Resource, namespace string, obj runtime.Object, wo WriteOptions) (runtime.Object, error) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if err := CheckNamespace(res, acc, namespace); err != nil {
		return nil, err
	}
	if len(acc.GetName()) == 0 && len(acc.GetGenerateName()) > 0 {
		acc.SetName(acc.GetGenerateName() + utilrand.String(5))
	}
	if res.Namespaced {
		if err := s.namespaceExists(ctx, namespace); err != nil {
			return nil, err
		}
	}
	// Server-owned metadata.
	acc.SetUID(types.UID(uuid.NewUUID()))
	acc.SetCreationTimestamp(metav1.NewTime(s.now().Truncate(1e9)))
	acc.SetResourceVersion("")
	acc.SetDeletionTimestamp(nil)
	acc.SetDeletionGracePeriodSeconds(nil)
	acc.SetSelfLink("")
	if res.PrepareForCreate != nil {
		res.PrepareForCreate(obj)
	}
	if errs := validateCreate(res, obj); len(errs) > 0 {
		return nil, apierrors.NewInvalid(kindFor(res), acc.GetName(), errs)
	}
	if !wo.ManagedFieldsDone {
		if obj, err = s.updateManagedFields(res, "", nil, obj, wo.FieldManager); err != nil {
			return nil, err
		}
		if acc, err = meta.Accessor(obj); err != nil {
			return nil, err
		}
	}
	if err := s.admit(ctx, admission.Create, acc.GetNamespace(), acc.GetName(), obj, nil, wo.DryRun); err != nil {
		return nil, err
	}
	key := res.Key(acc.GetNamespace(), acc.GetName())
	value, err := s.form.Encode(obj)
	if err != nil {
		return nil, err
	}
	if wo.DryRun {
		if existing, _ := s.Current(ctx, res, key, -1); existing != nil {
			return nil, apierrors.NewAlreadyExists(res.GroupResource(), acc.GetName())
		}
		return obj, nil
	}
	rev, err := s.storage.Create(ctx, key, value)
	if err != nil {
		return nil, StorageError(res, acc.GetName(), key, err)
	}
	acc.SetResourceVersion(strconv.FormatInt(rev, 10))
	return obj, nil
}

func validateCreate(res *registry.Resource, obj runtime.Object) field.ErrorList {
	om, err := ObjectMeta(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
	}
	errs := metavalidation.ValidateObjectMeta(om, res.Namespaced, res.NameValidator(), field.NewPath("metadata"))
	if res.ValidateCreate != nil {
		errs = append(errs, res.ValidateCreate(obj)...)
	}
	return errs
}

// namespaceExists answers Kubernetes' NotFound for a missing namespace.
func (s *Store) namespaceExists(ctx context.Context, namespace string) error {
	nsRes, ok := s.resources.Lookup("", "v1", "namespaces")
	if !ok {
		return nil
	}
	// A namespace seen in the cache exists; only a miss needs a consistent read.
	obj, err := s.Current(ctx, nsRes, nsRes.Key("", namespace), 0)
	if err == nil && obj == nil {
		obj, err = s.Current(ctx, nsRes, nsRes.Key("", namespace), -1)
	}
	if err != nil {
		return err
	}
	if obj == nil {
		return apierrors.NewNotFound(nsRes.GroupResource(), namespace)
	}
	return nil
}
