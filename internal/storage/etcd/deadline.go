package etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/leasehold/leasehold/internal/storage"
)

// DefaultCallTimeout bounds one request to etcd. It is longer than an etcd
// leader election (a second or two, and etcd's own write timeout of about
// 7 s covers one) only in the worst case; a cluster that has lost quorum
// never answers a linearizable read, and without a bound each such read
// held its API request until the client gave up.
const DefaultCallTimeout = 5 * time.Second

// callContext is ctx bounded by the store's per-call deadline, unless ctx
// already ends sooner.
func (s *Store) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= s.callTimeout {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.callTimeout)
}

// fail is wrap for the error of a call made under callContext(ctx). An
// error caused by the caller's own context (the client left, or its
// request timeout passed) stays that context's error. An unreachable or
// leaderless cluster is told apart from every other failure:
//   - a read, or a write etcd refused before proposing it (no leader, not
//     ready, overloaded), wraps storage.ErrUnavailable: nothing was done,
//     and the API answers 503 with a Retry-After;
//   - a write whose fate is unknown (the per-call deadline passed, etcd's
//     own request timeout, a lost connection) wraps
//     context.DeadlineExceeded, as kube-apiserver's 504 Timeout says: the
//     server "may still be processing the request".
func (s *Store) fail(ctx context.Context, op string, write bool, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", op, ctx.Err())
	}
	switch {
	case refused(err):
		return fmt.Errorf("%s: %w: %w", op, storage.ErrUnavailable, err)
	case unanswered(err) && write:
		return fmt.Errorf("%s: etcd did not confirm the write within %s: %w: %w", op, s.callTimeout, context.DeadlineExceeded, err)
	case unanswered(err):
		return fmt.Errorf("%s: %w: etcd did not answer within %s: %w", op, storage.ErrUnavailable, s.callTimeout, err)
	}
	return wrap(op, err)
}

// refused reports etcd errors that mean the request was turned away
// before anything was proposed.
func refused(err error) bool {
	for _, e := range []error{rpctypes.ErrNoLeader, rpctypes.ErrNotCapable, rpctypes.ErrStopped,
		rpctypes.ErrTooManyRequests, rpctypes.ErrUnhealthy} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// unanswered reports errors after which etcd may or may not have acted:
// deadlines, etcd's own timeouts, a changed leader and a broken connection.
func unanswered(err error) bool {
	for _, e := range []error{context.DeadlineExceeded, rpctypes.ErrTimeout, rpctypes.ErrTimeoutDueToLeaderFail,
		rpctypes.ErrTimeoutDueToConnectionLost, rpctypes.ErrTimeoutWaitAppliedIndex, rpctypes.ErrLeaderChanged} {
		if errors.Is(err, e) {
			return true
		}
	}
	switch st, _ := status.FromError(err); {
	case st.Code() == codes.DeadlineExceeded, st.Code() == codes.Unavailable:
		return true
	case st.Code() == codes.Unknown && st.Message() == context.DeadlineExceeded.Error():
		// etcd 3.4 ends a request whose deadline (the grpc-timeout the
		// per-call deadline sends along) passes on its side first with
		// code Unknown and the context's message.
		return true
	}
	return false
}
