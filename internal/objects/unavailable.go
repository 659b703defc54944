package objects

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/storage"
)

// StoreUnavailable gives a store that did not answer its Status, wherever
// the error surfaces (a read of the current revision, a list page, a
// write), so that a client never sees a 500 for it:
//   - a deadline that passed (the request's --request-timeout or
//     ?timeout=, or a write the store did not confirm in time) is
//     kube-apiserver's 504 Timeout, "request did not complete within
//     requested timeout - context deadline exceeded": the write may yet be
//     done;
//   - storage.ErrUnavailable (nothing was done: a store that is reopening,
//     or an etcd cluster without quorum) is 503 with retryAfterSeconds 1,
//     which apiserver's writeError also sends as Retry-After.
//
// Other errors, and errors that already carry a Status, are returned as they are.
func StoreUnavailable(err error) error {
	var se apierrors.APIStatus
	switch {
	case err == nil || errors.As(err, &se):
		return err
	case errors.Is(err, storage.ErrUnavailable):
		// First: the store's own deadline may be in the chain too.
		st := apierrors.NewServiceUnavailable(err.Error())
		st.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: 1}
		return st
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		cause := context.DeadlineExceeded
		if errors.Is(err, context.Canceled) {
			cause = context.Canceled
		}
		return apierrors.NewTimeoutError("request did not complete within requested timeout - "+cause.Error(), 0)
	}
	return err
}
