package apiserver

import (
	"context"
	"net/http"
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
	"github.com/leasehold/leasehold/internal/objects"
	"github.com/leasehold/leasehold/internal/registry"
)

func (s *Server) create(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	wr, err := s.readWriteRequest(r, res)
	if err != nil {
		return err
	}
	created, err := s.createObject(r.Context(), res, info.namespace, wr.obj, wr.opts)
	if err != nil {
		return err
	}
	return s.respond(w, res, wr.n, created, true, wr.warnings)
}

// createObject validates, prepares and stores a new object; obj is owned by
// the caller and is modified.
func (s *Server) createObject(ctx context.Context, res *registry.Resource, namespace string, obj runtime.Object, wo writeOptions) (runtime.Object, error) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if err := checkNamespaceMatch(res, acc, namespace); err != nil {
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
	if !wo.managedFieldsDone {
		if obj, err = s.updateManagedFields(res, "", nil, obj, wo.fieldManager); err != nil {
			return nil, err
		}
		if acc, err = meta.Accessor(obj); err != nil {
			return nil, err
		}
	}
	if err := s.admit(ctx, admission.Create, acc.GetNamespace(), acc.GetName(), obj, nil, wo.dryRun); err != nil {
		return nil, err
	}
	key := res.Key(acc.GetNamespace(), acc.GetName())
	value, err := s.form.Encode(obj)
	if err != nil {
		return nil, err
	}
	if wo.dryRun {
		if existing, _ := s.objects.Current(ctx, res, key, -1); existing != nil {
			return nil, apierrors.NewAlreadyExists(res.GroupResource(), acc.GetName())
		}
		return obj, nil
	}
	rev, err := s.cfg.Store.Create(ctx, key, value)
	if err != nil {
		return nil, objects.StorageError(res, acc.GetName(), key, err)
	}
	acc.SetResourceVersion(strconv.FormatInt(rev, 10))
	return obj, nil
}

func validateCreate(res *registry.Resource, obj runtime.Object) field.ErrorList {
	om, err := objects.ObjectMeta(obj)
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
func (s *Server) namespaceExists(ctx context.Context, namespace string) error {
	nsRes, ok := s.cfg.Resources.Lookup("", "v1", "namespaces")
	if !ok {
		return nil
	}
	// A namespace seen in the cache exists; only a miss needs a consistent read.
	obj, err := s.objects.Current(ctx, nsRes, nsRes.Key("", namespace), 0)
	if err == nil && obj == nil {
		obj, err = s.objects.Current(ctx, nsRes, nsRes.Key("", namespace), -1)
	}
	if err != nil {
		return err
	}
	if obj == nil {
		return apierrors.NewNotFound(nsRes.GroupResource(), namespace)
	}
	return nil
}
