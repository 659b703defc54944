package embedded

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/leasehold/leasehold/internal/storage"
)

// Snapshot is the store's state at one revision, read page by page while
// the store goes on serving: the online backup (internal/snapshot) reads
// it. It holds one pebble snapshot, so every page belongs to the same
// revision however many writes and compactions happen meanwhile, and a
// paged read does not pay, page after page, for undoing the writes since
// (as a List at an old revision would). Close it promptly: pebble keeps
// what it holds on disk. A reopen after a disk fault, or Close, ends it:
// its next page fails.
type Snapshot struct {
	s      *Store
	snap   *pebble.Snapshot
	prefix string
	rev    int64
	// past holds the keys an unacknowledged batch (in pebble but not yet
	// published) changed, at rev: reads show acknowledged writes only.
	past  map[string]*storage.KeyValue
	next  string // the key the next page starts from
	done  bool
	abort <-chan struct{}

	closeOnce sync.Once
}

// Snapshot opens a Snapshot of the keys under prefix at the newest
// acknowledged revision.
func (s *Store) Snapshot(prefix string) (*Snapshot, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.release()
	acked := s.rev.Load()
	sn := &Snapshot{s: s, prefix: prefix, rev: acked, next: prefix, abort: s.abortReplays}
	// Counted as a replay, so a reopen waits for it to close before it
	// closes the DB, and as a goroutine, so Close does.
	s.replays.Add(1)
	s.goroutines.Add(1)
	sn.snap = s.db.NewSnapshot()
	head, err := readMeta(sn.snap, metaRevision)
	if err == nil && head > acked {
		sn.past, err = pastStates(sn.snap, prefix, acked, head)
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot at revision %d: %w", acked, sn.closeWith(err))
	}
	return sn, nil
}

// Revision is the revision every page is read at.
func (sn *Snapshot) Revision() int64 { return sn.rev }

// Next returns the next (up to) limit keys in key order, and io.EOF once
// every key was returned.
func (sn *Snapshot) Next(ctx context.Context, limit int) ([]storage.KeyValue, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case <-sn.s.closing:
		return nil, ErrClosed
	case <-sn.abort:
		return nil, errReopening
	default:
	}
	if sn.done {
		return nil, io.EOF
	}
	kvs, more, err := mergeList(sn.snap, sn.prefix, storage.ListOptions{StartKey: sn.next, Limit: limit}, sn.past)
	if err != nil {
		return nil, fmt.Errorf("snapshot at revision %d: %w", sn.rev, err)
	}
	if !more {
		sn.done = true
	}
	if len(kvs) == 0 {
		return nil, io.EOF
	}
	// The smallest key after the last one.
	sn.next = kvs[len(kvs)-1].Key + "\x00"
	return kvs, nil
}

// Close releases the pebble snapshot. It may be called more than once.
func (sn *Snapshot) Close() error { return sn.closeWith(nil) }

func (sn *Snapshot) closeWith(err error) error {
	sn.closeOnce.Do(func() {
		if cerr := sn.snap.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close pebble snapshot: %w", cerr)
		}
		sn.s.replays.Done()
		sn.s.goroutines.Done()
	})
	return err
}
