package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/storage/embedded"
)

// Source is a store's keys at one revision, read a page at a time.
type Source interface {
	// Revision is the revision every page is read at.
	Revision() int64
	// Next returns the next page of at most limit keys in key order, and
	// io.EOF after the last.
	Next(ctx context.Context, limit int) ([]storage.KeyValue, error)
	Close() error
}

// Open returns a Source for the keys of s under prefix at its newest
// revision. The embedded store reads one pebble snapshot of itself; any
// other store (etcd) is read with Lists pinned to the revision of the
// first page, which its history must keep until the last page: a store
// that compacts past it meanwhile fails the read with storage.ErrCompacted,
// and the save is retried.
func Open(ctx context.Context, s storage.Interface, prefix string) (Source, error) {
	if e, ok := s.(*embedded.Store); ok {
		sn, err := e.Snapshot(prefix)
		if err != nil {
			return nil, err
		}
		return sn, nil
	}
	rev, err := s.CurrentRevision(ctx)
	if err != nil {
		return nil, fmt.Errorf("snapshot: current revision: %w", err)
	}
	return &listSource{s: s, prefix: prefix, rev: rev, next: prefix}, nil
}

// listSource pages through List at one revision.
type listSource struct {
	s      storage.Interface
	prefix string
	rev    int64
	next   string
	done   bool
}

func (l *listSource) Revision() int64 { return l.rev }

func (l *listSource) Next(ctx context.Context, limit int) ([]storage.KeyValue, error) {
	if l.done {
		return nil, io.EOF
	}
	res, err := l.s.List(ctx, l.prefix, storage.ListOptions{Revision: l.rev, StartKey: l.next, Limit: limit})
	if errors.Is(err, storage.ErrCompacted) {
		return nil, fmt.Errorf("snapshot at revision %d: the store compacted it while it was read; save again (or keep more history): %w", l.rev, err)
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot at revision %d: %w", l.rev, err)
	}
	l.done = !res.More
	if len(res.KVs) == 0 {
		l.done = true
		return nil, io.EOF
	}
	l.next = res.KVs[len(res.KVs)-1].Key + "\x00"
	return res.KVs, nil
}

func (l *listSource) Close() error { return nil }
