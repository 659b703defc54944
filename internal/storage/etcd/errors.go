package etcd

import (
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/leasehold/leasehold/internal/storage"
)

// wrap gives an etcd error its context and, where one fits, the storage
// error callers test for; the etcd error stays in the chain too. A nil err
// stays nil.
func wrap(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, rpctypes.ErrCompacted):
		return fmt.Errorf("%s: %w: %w", op, storage.ErrCompacted, err)
	case errors.Is(err, rpctypes.ErrFutureRev):
		return fmt.Errorf("%s: %w: %w", op, storage.ErrFutureRevision, err)
	case errors.Is(err, rpctypes.ErrNoSpace):
		// etcd's NOSPACE alarm: writes refused until its quota is raised
		// or it is compacted and defragmented; reads go on.
		return fmt.Errorf("%s: %w: %w", op, storage.ErrInsufficientStorage, err)
	default:
		return fmt.Errorf("%s: %w", op, err)
	}
}
