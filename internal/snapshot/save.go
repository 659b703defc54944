package snapshot

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/storage/embedded"
)

// Prefix is where every Leasehold key lives, and what a snapshot holds.
const Prefix = "/registry/"

// pageSize is how many keys a save reads at a time: its memory is one
// page of values.
const pageSize = 1000

// Save writes a snapshot of every key of s under Prefix, at one revision,
// to w, and returns its header and key count. It does not close w.
func Save(ctx context.Context, s storage.Interface, w io.Writer) (Header, uint64, error) {
	src, err := Open(ctx, s, Prefix)
	if err != nil {
		return Header{}, 0, err
	}
	if src.Revision() == 0 {
		return Header{}, 0, errors.Join(ErrEmptyRevision, src.Close())
	}
	h := Header{Revision: src.Revision(), Prefix: Prefix, Source: sourceName(s), Created: time.Now().UTC()}
	n, err := Copy(ctx, src, w, h)
	return h, n, errors.Join(err, src.Close())
}

// Copy writes src, under header h, to w.
func Copy(ctx context.Context, src Source, w io.Writer, h Header) (uint64, error) {
	sw, err := NewWriter(w, h)
	if err != nil {
		return 0, err
	}
	for {
		kvs, err := src.Next(ctx, pageSize)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return sw.Count(), err
		}
		for _, kv := range kvs {
			if err := sw.Add(kv); err != nil {
				return sw.Count(), err
			}
		}
	}
	if err := sw.Close(); err != nil {
		return sw.Count(), err
	}
	return sw.Count(), nil
}

func sourceName(s storage.Interface) string {
	if _, ok := s.(*embedded.Store); ok {
		return "embedded"
	}
	return "etcd"
}

// ErrEmptyRevision is returned for a store that has never been written.
var ErrEmptyRevision = errors.New("the store has never been written (revision 0): nothing to save")
