package objects

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TooLargeResourceVersion is kube-apiserver's answer to a read or watch at a
// resourceVersion this server has not reached in time: 504 Timeout,
// retryAfterSeconds 1, and the ResourceVersionTooLarge cause. The cause is
// what client-go's reflector tests (apierrors.HasStatusCause) to tell a
// replica that lags behind another from any other timeout, and relist
// instead of failing, so it must be there whenever the message is.
func TooLargeResourceVersion(requested, current int64) *apierrors.StatusError {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", requested, current), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type:    metav1.CauseTypeResourceVersionTooLarge,
		Message: "Too large resource version",
	}}
	return err
}
