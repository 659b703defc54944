package objects

// errors.go is the Status a client gets for what storage answered.

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/storage"
)

// StorageError turns a storage error from reading or writing key into the
// Status a client gets.
func StorageError(res *registry.Resource, name, key string, err error) error {
	switch {
	case errors.Is(err, storage.ErrConflict):
		return Conflict(res, name)
	case errors.Is(err, storage.ErrNotFound):
		return apierrors.NewNotFound(res.GroupResource(), name)
	case errors.Is(err, storage.ErrKeyExists):
		return apierrors.NewAlreadyExists(res.GroupResource(), name)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, storage.ErrUnavailable):
		// The client gave up, its timeout passed, or the store did not
		// answer: 504 or 503, never a server fault (unavailable.go).
		return StoreUnavailable(err)
	case errors.Is(err, storage.ErrInsufficientStorage):
		// The disk is full: the write was not made, and retrying at once
		// will not help. apimachinery has no constructor (kube-apiserver
		// has no such case); the reason names the HTTP status.
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusInsufficientStorage,
			Reason: reasonInsufficientStorage, Message: err.Error(),
		}}
	}
	return fmt.Errorf("storage %s: %w", key, err)
}

// reasonInsufficientStorage is the Status reason of a 507.
const reasonInsufficientStorage metav1.StatusReason = "InsufficientStorage"

// Conflict is the 409 a stale resourceVersion gets.
func Conflict(res *registry.Resource, name string) error {
	return apierrors.NewConflict(res.GroupResource(), name, errors.New(registryConflictMsg))
}

const registryConflictMsg = "the object has been modified; please apply your changes to the latest version and try again"
