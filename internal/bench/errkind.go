package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Error kinds that are not a server status reason.
const (
	KindConflict   = "conflict"   // 409 on update: the cached resourceVersion was stale
	KindTimeout    = "timeout"    // the request's deadline passed or the network timed out
	KindConnection = "connection" // the connection could not be made or broke
	KindOverrun    = "overrun"    // rate mode: a node's renewal was still running when the next fell due
	KindOther      = "other"      // anything else (decoding, client-side errors)
)

// ErrorKind names the kind of a failed request for the error counts: the
// Kubernetes status reason for an API error (with "conflict" for 409 since
// conflicts are an expected part of the renewal protocol), otherwise whether
// it was a timeout or a connection failure.
func ErrorKind(err error) string {
	if status, ok := err.(apierrors.APIStatus); ok || errors.As(err, &status) {
		st := status.Status()
		switch {
		case st.Reason == metav1.StatusReasonConflict:
			return KindConflict
		case st.Reason != "":
			return string(st.Reason)
		default:
			return fmt.Sprintf("status-%d", st.Code)
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return KindTimeout
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return KindTimeout
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed) {
		return KindConnection
	}
	return KindOther
}
