package embedded

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/leasehold/leasehold/internal/storage"
)

// Loader writes a new store from a snapshot (internal/snapshot's restore):
// every key keeps its ModRevision and CreateRevision, so the objects keep
// their resourceVersions, and the store's revision and compacted revision
// are the snapshot's (or a later one, see Finish). Writing the layout
// directly is what keeps the revisions: writing through Create would
// number the keys 1, 2, 3...
//
// The store it writes is what a store compacted at that revision holds:
// each key's current state and the log record of its newest write (which
// says nothing about what it replaced: no read at or after the compacted
// revision needs that). The keys' revisions must therefore be distinct:
// the log has one record per revision.
type Loader struct {
	dir   string
	db    *pebble.DB
	batch *pebble.Batch
	// revs are the revisions written, to refuse a second key at one.
	revs map[int64]string
	max  int64
}

// loadBatchBytes is how much a Loader stages before committing a batch:
// large enough that commits are few, small enough to bound its memory.
const loadBatchBytes = 4 << 20

// NewLoader creates the store's directory dir, which must not exist or be
// empty: a restore never mixes with data already there.
func NewLoader(dir string) (*Loader, error) {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("restore into %s: %w", dir, err)
	case len(entries) > 0:
		return nil, fmt.Errorf("restore into %s: the directory is not empty (restore into a new one)", dir)
	}
	if err := makePrivate(dir); err != nil {
		return nil, fmt.Errorf("restore into %s: %w", dir, err)
	}
	db, err := pebble.Open(dir, &pebble.Options{
		FS:                 privateFS{FS: vfs.Default},
		Logger:             pebbleLogger{log: slog.New(slog.DiscardHandler)},
		FormatMajorVersion: pebble.FormatNewest,
		MemTableSize:       memTableSize,
	})
	if err != nil {
		return nil, fmt.Errorf("restore into %s: open pebble: %w", dir, err)
	}
	return &Loader{dir: dir, db: db, batch: db.NewBatch(), revs: make(map[int64]string)}, nil
}

// Add stages one key. Keys may come in any order.
func (l *Loader) Add(kv storage.KeyValue) error {
	if kv.ModRevision <= 0 || kv.CreateRevision <= 0 || kv.CreateRevision > kv.ModRevision {
		return fmt.Errorf("restore %s: revisions created %d, modified %d: %w", kv.Key, kv.CreateRevision, kv.ModRevision, errCorrupt)
	}
	if other, dup := l.revs[kv.ModRevision]; dup {
		return fmt.Errorf("restore: %s and %s were both written at revision %d (one transaction of another etcd client?); the embedded store keeps one write per revision",
			other, kv.Key, kv.ModRevision)
	}
	l.revs[kv.ModRevision] = kv.Key
	l.max = max(l.max, kv.ModRevision)
	rec := logRecord{typ: storage.EventPut, key: kv.Key, value: kv.Value, createRev: kv.CreateRevision}
	if err := l.batch.Set(valueKey(kv.Key), encodeCurrent(kv.ModRevision, kv.CreateRevision), nil); err != nil {
		return fmt.Errorf("restore %s: %w", kv.Key, err)
	}
	if err := l.batch.Set(logKey(kv.ModRevision), rec.encode(), nil); err != nil {
		return fmt.Errorf("restore %s: %w", kv.Key, err)
	}
	if l.batch.Len() >= loadBatchBytes {
		if err := l.batch.Commit(pebble.NoSync); err != nil {
			return fmt.Errorf("restore into %s: %w", l.dir, err)
		}
		l.batch.Reset()
	}
	return nil
}

// Finish sets the store's revision, and its compacted revision, to rev
// (which must not be below any key's), syncs everything and closes the
// store; it can then be opened with Open. Reads and watches from before
// rev answer storage.ErrCompacted there, since the history is not in the
// snapshot.
func (l *Loader) Finish(rev int64) error {
	if rev < l.max {
		return errors.Join(fmt.Errorf("restore: revision %d is older than a key's (%d)", rev, l.max), l.Abort())
	}
	for _, key := range [][]byte{metaRevision, metaCompacted, metaSwept} {
		if err := l.batch.Set(key, encodeInt64(rev), nil); err != nil {
			return errors.Join(fmt.Errorf("restore: %w", err), l.Abort())
		}
	}
	if err := l.batch.Commit(pebble.Sync); err != nil {
		return errors.Join(fmt.Errorf("restore into %s: %w", l.dir, err), l.Abort())
	}
	// Flushed, so the restored store opens from sstables, not a long WAL.
	if err := l.db.Flush(); err != nil {
		return errors.Join(fmt.Errorf("restore into %s: flush: %w", l.dir, err), l.Abort())
	}
	return l.Abort()
}

// Abort closes the store without finishing it: the directory then holds
// no usable store (its revision is unset), and the caller removes it.
func (l *Loader) Abort() error {
	if l.db == nil {
		return nil
	}
	err := errors.Join(l.batch.Close(), l.db.Close())
	l.db = nil
	if err != nil {
		return fmt.Errorf("restore into %s: close: %w", l.dir, err)
	}
	return makePrivate(l.dir)
}
