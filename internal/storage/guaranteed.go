package storage

import (
	"context"
	"errors"
	"fmt"
)

// TryUpdateFunc computes a new value from the current one. Returning an error
// aborts the update with that error.
type TryUpdateFunc func(current KeyValue) (newValue []byte, err error)

// GuaranteedUpdate reads key and applies tryUpdate until its compare-and-swap
// succeeds, so concurrent writers never lose each other's changes. It returns
// ErrNotFound if the key does not exist, and the new revision otherwise.
func GuaranteedUpdate(ctx context.Context, s Interface, key string, tryUpdate TryUpdateFunc) (int64, error) {
	for {
		cur, err := s.Get(ctx, key)
		if err != nil {
			return 0, err
		}
		next, err := tryUpdate(cur)
		if err != nil {
			return 0, err
		}
		rev, err := s.Update(ctx, key, cur.ModRevision, next)
		if errors.Is(err, ErrConflict) {
			if ctx.Err() != nil {
				return 0, fmt.Errorf("guaranteed update of %s: %w", key, ctx.Err())
			}
			continue
		}
		return rev, err
	}
}
