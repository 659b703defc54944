package etcd

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/leasehold/leasehold/internal/storage"
)

// What a call that etcd did not answer returns: the caller's own context
// error when that ended it; ErrUnavailable for reads and refused writes
// (nothing done: 503); a deadline for a write that may have been done (504);
// and the plain wrapped error for anything else.
func TestFailTellsRefusedFromUnanswered(t *testing.T) {
	s := &Store{callTimeout: time.Second}
	live := context.Background()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	unavailable := status.Error(codes.Unavailable, "connection refused")
	etcd34Deadline := status.Error(codes.Unknown, "context deadline exceeded")
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		write bool
		err   error
		want  error
		not   error
	}{
		{"caller gone", ended, false, context.Canceled, context.Canceled, storage.ErrUnavailable},
		{"read past the call deadline", live, false, context.DeadlineExceeded, storage.ErrUnavailable, nil},
		{"read, member unreachable", live, false, unavailable, storage.ErrUnavailable, nil},
		{"write, no leader", live, true, rpctypes.ErrNoLeader, storage.ErrUnavailable, context.DeadlineExceeded},
		{"write past the call deadline", live, true, context.DeadlineExceeded, context.DeadlineExceeded, storage.ErrUnavailable},
		{"write, etcd timed out", live, true, rpctypes.ErrTimeout, context.DeadlineExceeded, storage.ErrUnavailable},
		{"write, member unreachable", live, true, unavailable, context.DeadlineExceeded, storage.ErrUnavailable},
		// etcd 3.4's answer when the deadline passes on its side first.
		{"read, etcd's deadline", live, false, etcd34Deadline, storage.ErrUnavailable, nil},
		{"write, etcd's deadline", live, true, etcd34Deadline, context.DeadlineExceeded, storage.ErrUnavailable},
		{"other unknown error", live, true, status.Error(codes.Unknown, "something else"), status.Error(codes.Unknown, "something else"), context.DeadlineExceeded},
		{"compacted", live, false, rpctypes.ErrCompacted, storage.ErrCompacted, storage.ErrUnavailable},
	} {
		got := s.fail(tc.ctx, "etcd: op", tc.write, tc.err)
		if !errors.Is(got, tc.want) || (tc.not != nil && errors.Is(got, tc.not)) {
			t.Errorf("%s: %v; want %v and not %v", tc.name, got, tc.want, tc.not)
		}
	}
}

// A call gets the store's deadline unless its caller's ends sooner.
func TestCallContextKeepsTheSoonerDeadline(t *testing.T) {
	s := &Store{callTimeout: time.Minute}
	ctx, cancel := s.callContext(context.Background())
	d, ok := ctx.Deadline()
	cancel()
	if !ok || time.Until(d) > time.Minute || time.Until(d) < 50*time.Second {
		t.Fatalf("deadline %v (%v), want about a minute away", d, ok)
	}
	short, cancelShort := context.WithTimeout(context.Background(), time.Second)
	defer cancelShort()
	ctx, cancel = s.callContext(short)
	defer cancel()
	if ctx != short {
		t.Fatal("a caller whose deadline is sooner got a new context")
	}
}
