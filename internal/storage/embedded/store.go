package embedded

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/leasehold/leasehold/internal/storage"
)

// ErrClosed is returned by every method called after Close.
var ErrClosed = errors.New("embedded store is closed")

// Store is the embedded storage driver. Create one with Open and stop it with
// Close.
type Store struct {
	db   *pebble.DB
	opts Options

	// reqs is unbuffered on purpose: a send succeeds only when the committer
	// takes the request, so after the committer exits no request can be
	// stranded in a buffer.
	reqs    chan *writeReq
	closing chan struct{}

	// lifecycle guards db against use after Close: readers hold it shared,
	// Close takes it exclusively to set closed.
	lifecycle sync.RWMutex
	closed    bool
	closeOnce sync.Once
	closeErr  error

	// goroutines tracks the committer, the compactor and every watcher.
	goroutines sync.WaitGroup

	// index is owned by the committer goroutine (and by Open before it starts).
	index map[string]indexEntry
	// failed is set by the committer when a commit fails; later writes
	// return it, since the durable state is then unknown. Committer-owned.
	failed error

	// mu orders publishing a batch (rev, watchers) against a watcher's switch
	// from replay to live events.
	mu       sync.Mutex
	watchers map[*watcher]chan []storage.Event
	// prevWatchers counts the watchers in watchers that want previous
	// values; guarded by mu.
	prevWatchers int
	// rev is the newest acknowledged revision; written under mu, read freely.
	rev       atomic.Int64
	compacted atomic.Int64
	// compactMu serialises compactions.
	compactMu sync.Mutex
	// swept is the revision up to which compaction has swept the log (see
	// Compact); guarded by compactMu.
	swept int64
}

// indexEntry is a key's current revisions: all the committer needs to check
// preconditions and link log records. Values stay out of memory (they were
// an eighth of a 10,000-node server's live heap); the previous values that
// watchers may want are read back only while one does (see publish), since a
// pebble Get per write once cost ~7% of a renewal.
type indexEntry struct {
	modRev, createRev int64
}

var _ storage.Interface = (*Store)(nil)

// memTableSize is pebble's memtable size. 100,000 heartbeating nodes (about
// 1,300 writes a second in a 100k fleet run: lease renewals, node status,
// registrations; measured when values were still stored twice) filled the 4 MiB
// memtable every few seconds; each switch cost a flush and a WAL rotation
// (up to 350 ms here), and writes stalled on the memtable count and L0 file
// limits. 16 MiB (with four queued) removed the stalls in that run as 32 MiB
// did, for half the memory. Memtables grow to this size gradually, so a
// small store does not pay for it.
const memTableSize = 16 << 20

// Open opens (creating if needed) the store in dir, rebuilds its index from
// disk and starts its goroutines.
func Open(dir string, opts Options) (*Store, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("embedded store options: %w", err)
	}
	// Pebble's own messages carry one attribute saying so; a second
	// "component" would repeat the key the caller's logger already has.
	pebbleLog := opts.Logger.With("engine", "pebble")
	db, err := pebble.Open(dir, &pebble.Options{
		Logger:             pebbleLogger{log: pebbleLog},
		FormatMajorVersion: pebble.FormatNewest,
		EventListener:      (&stallLog{log: pebbleLog}).listener(),
		MemTableSize:       memTableSize,
		// Writes stop only once this many memtables wait for their flush:
		// a flush falling behind for a moment (the CPU busy serving) then
		// delays nothing, instead of holding every writer.
		MemTableStopWritesThreshold: 4,
	})
	if err != nil {
		return nil, fmt.Errorf("open pebble in %s: %w", dir, err)
	}
	s := &Store{
		db:       db,
		opts:     opts,
		reqs:     make(chan *writeReq),
		closing:  make(chan struct{}),
		index:    make(map[string]indexEntry),
		watchers: make(map[*watcher]chan []storage.Event),
	}
	if err := s.load(); err != nil {
		return nil, errors.Join(fmt.Errorf("load embedded store in %s: %w", dir, err), db.Close())
	}
	opts.Logger.Info("embedded store opened", "dir", dir, "revision", s.rev.Load(),
		"compacted", s.compacted.Load(), "keys", len(s.index))
	s.goroutines.Add(1)
	go s.commitLoop()
	if opts.Compaction.Interval > 0 {
		s.goroutines.Add(1)
		go s.compactLoop()
	}
	return s, nil
}

// load reads the meta keys and rebuilds the index from the current values.
func (s *Store) load() error {
	rev, err := readMeta(s.db, metaRevision)
	if err != nil {
		return err
	}
	compacted, err := readMeta(s.db, metaCompacted)
	if err != nil {
		return err
	}
	swept, err := readMeta(s.db, metaSwept)
	if err != nil {
		return err
	}
	s.rev.Store(rev)
	s.compacted.Store(compacted)
	s.swept = swept

	lower, upper := valueRange("")
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("iterate values: %w", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		key := string(it.Key()[1:])
		c, err := decodeCurrent(key, it.Value())
		if err != nil {
			return errors.Join(err, it.Close())
		}
		if c.modRev > rev {
			return errors.Join(fmt.Errorf("key %q at revision %d is newer than the store's %d: %w",
				key, c.modRev, rev, errCorrupt), it.Close())
		}
		s.index[key] = indexEntry{modRev: c.modRev, createRev: c.createRev}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("iterate values: %w", err)
	}
	if swept < compacted {
		return s.restoreCurrentRecords(compacted)
	}
	return nil
}

// restoreCurrentRecords writes back the log record of every key whose
// newest write is at or below compacted and whose record is missing. Before
// compaction kept those records (see Compact), it deleted the whole log up
// to the compacted revision, yet undoing the next write to such a key needs
// its record. A store that crashed in the middle of a sweep has them all.
// The restored records say nothing about what they replaced, which no read
// at or after the compacted revision needs.
func (s *Store) restoreCurrentRecords(compacted int64) error {
	lower, upper := valueRange("")
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return fmt.Errorf("iterate values: %w", err)
	}
	b := s.db.NewBatch()
	defer b.Close()
	for ok := it.First(); ok; ok = it.Next() {
		key := string(it.Key()[1:])
		c, err := decodeCurrent(key, it.Value())
		if err == nil && c.modRev <= compacted {
			err = s.restoreRecord(b, key, c)
		}
		if err != nil {
			return errors.Join(err, it.Close())
		}
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("iterate values: %w", err)
	}
	if b.Empty() {
		return nil
	}
	s.opts.Logger.Info("restored the log records of unchanged keys", "count", b.Count(), "compacted", compacted)
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("restore log records: %w", err)
	}
	return nil
}

// restoreRecord stages the log record of key's current state c into b if
// the log lacks it. Only a state written before values moved to the log can
// lack its record, and such a state carries its value (an empty one
// decodes as no copy, which restores the same empty value).
func (s *Store) restoreRecord(b *pebble.Batch, key string, c current) error {
	_, closer, err := s.db.Get(logKey(c.modRev))
	if err == nil {
		if err := closer.Close(); err != nil {
			return fmt.Errorf("read log revision %d: %w", c.modRev, err)
		}
		return nil
	}
	if !errors.Is(err, pebble.ErrNotFound) {
		return fmt.Errorf("read log revision %d: %w", c.modRev, err)
	}
	rec := logRecord{typ: storage.EventPut, key: key, value: c.inline, createRev: c.createRev}
	if err := b.Set(logKey(c.modRev), rec.encode(), nil); err != nil {
		return fmt.Errorf("restore log revision %d: %w", c.modRev, err)
	}
	return nil
}

// readMeta reads a meta int64 from the DB or a snapshot (0 when unset).
func readMeta(r pebble.Reader, key []byte) (int64, error) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read meta %q: %w", key, err)
	}
	defer closer.Close()
	n, err := decodeInt64(v)
	if err != nil {
		return 0, fmt.Errorf("meta %q: %w", key, err)
	}
	return n, nil
}

// acquire lets a reader use db until release; it fails after Close.
func (s *Store) acquire() error {
	s.lifecycle.RLock()
	if s.closed {
		s.lifecycle.RUnlock()
		return ErrClosed
	}
	return nil
}

func (s *Store) release() { s.lifecycle.RUnlock() }

// Get implements storage.Interface.
func (s *Store) Get(ctx context.Context, key string) (storage.KeyValue, error) {
	if err := ctx.Err(); err != nil {
		return storage.KeyValue{}, err
	}
	if err := s.acquire(); err != nil {
		return storage.KeyValue{}, err
	}
	defer s.release()
	return s.committedValue(key)
}

// committedValue reads key's newest committed value from pebble; the caller
// keeps the db open (a reader holding acquire, or the committer). It reads
// one snapshot: between reading the state and the record it points at, a
// write could supersede that record and a compaction delete it.
func (s *Store) committedValue(key string) (storage.KeyValue, error) {
	snap := s.db.NewSnapshot()
	defer snap.Close()
	v, closer, err := snap.Get(valueKey(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return storage.KeyValue{}, fmt.Errorf("get %s: %w", key, storage.ErrNotFound)
	}
	if err != nil {
		return storage.KeyValue{}, fmt.Errorf("get %s: %w", key, err)
	}
	c, err := decodeCurrent(key, v)
	if closeErr := closer.Close(); err == nil && closeErr != nil {
		err = fmt.Errorf("get %s: %w", key, closeErr)
	}
	if err != nil {
		return storage.KeyValue{}, err
	}
	return currentValue(snap, key, c)
}

// CurrentRevision implements storage.Interface.
func (s *Store) CurrentRevision(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return s.rev.Load(), nil
}

// CompactedRevision implements storage.Interface.
func (s *Store) CompactedRevision(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return s.compacted.Load(), nil
}

// Close implements storage.Interface: writes already taken by the committer
// finish, later ones fail with ErrClosed, watch channels close, and pebble is
// closed once nothing uses it.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.closing)
		s.lifecycle.Lock()
		s.closed = true
		s.lifecycle.Unlock()
		s.goroutines.Wait()
		if err := s.db.Close(); err != nil {
			s.closeErr = fmt.Errorf("close pebble: %w", err)
		}
		s.opts.Logger.Info("embedded store closed", "revision", s.rev.Load())
	})
	return s.closeErr
}
