package etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leasehold/leasehold/internal/storage"
)

// Compact implements storage.Interface with etcd's Compact (logical: the
// revisions become unreadable at once, etcd frees the space in the
// background). Compacting at or below a compaction already done is a no-op,
// as in the embedded driver.
func (s *Store) Compact(ctx context.Context, revision int64) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	_, err := s.client.Compact(ctx, revision)
	err = wrap(fmt.Sprintf("etcd: compact at %d", revision), err)
	switch {
	case err == nil:
		s.noteCompacted(revision)
		return nil
	case errors.Is(err, storage.ErrCompacted):
		return nil
	default:
		return err
	}
}

// noteCompacted raises the known compacted revision to rev.
func (s *Store) noteCompacted(rev int64) {
	for {
		cur := s.compacted.Load()
		if rev <= cur || s.compacted.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// CompactedRevision implements storage.Interface. etcd does not report its
// compacted revision, so it is the smallest revision a Range can still read,
// found by binary search above the newest compaction already known (a
// compaction only moves forward). Never compacted, or compacted at 1, reads
// as 0 unless this Store compacted at 1 itself; both forget nothing.
func (s *Store) CompactedRevision(ctx context.Context) (int64, error) {
	cur, err := s.CurrentRevision(ctx)
	if err != nil {
		return 0, err
	}
	if err := s.acquire(); err != nil {
		return 0, err
	}
	defer s.release()
	known := s.compacted.Load()
	lo := max(known, 1)
	readable, err := s.readableAt(ctx, lo)
	if err != nil || readable {
		return known, err
	}
	// Invariant: lo is compacted away, hi is readable (the current revision
	// always is).
	hi := cur
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := s.readableAt(ctx, mid)
		if err != nil {
			return 0, err
		}
		if ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	s.noteCompacted(hi)
	return hi, nil
}

// readableAt says whether revision rev has not been compacted away.
func (s *Store) readableAt(ctx context.Context, rev int64) (bool, error) {
	_, err := s.client.Get(ctx, s.keys.prefix, clientv3.WithCountOnly(), clientv3.WithRev(rev))
	err = wrap(fmt.Sprintf("etcd: probing revision %d", rev), err)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, storage.ErrCompacted):
		return false, nil
	default:
		return false, err
	}
}

func isFuture(err error) bool { return errors.Is(err, storage.ErrFutureRevision) }

// compactLoop is the optional compactor, owned by the Store (which counted it
// in inflight) and stopped by Close.
func (s *Store) compactLoop(interval time.Duration) {
	defer s.release()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	var previous int64 // the revision seen one tick ago
	for {
		select {
		case <-s.closing.Done():
			return
		case <-ticker.C:
		}
		ctx, cancel := context.WithTimeout(s.closing, interval)
		if previous > 0 {
			if err := s.Compact(ctx, previous); err != nil && s.closing.Err() == nil {
				s.log.Error("compaction failed", "revision", previous, "err", err)
			} else if err == nil {
				s.log.Debug("compacted", "revision", previous)
			}
		}
		cur, err := s.CurrentRevision(ctx)
		cancel()
		if err != nil {
			if s.closing.Err() == nil {
				s.log.Error("reading the revision to compact at next", "err", err)
			}
			continue
		}
		previous = cur
	}
}
