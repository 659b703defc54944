package embedded

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/leasehold/leasehold/internal/storage"
)

// ErrClosed is returned by every method called after Close.
var ErrClosed = errors.New("embedded store is closed")

// Store is the embedded storage driver. Create one with Open and stop it with
// Close.
type Store struct {
	dir  string
	opts Options
	// db is replaced by reopen while it holds lifecycle exclusively; it is
	// nil only after a reopen that could open nothing (acquire then fails).
	db *pebble.DB

	// reqs queues up to one batch (Options.MaxBatch) of writes the
	// committer has yet to take (see submit). A write still queued when
	// the committer exits is never taken: its writer, which sees
	// committerDone closed, answers it ErrClosed.
	reqs          chan *writeReq
	committerDone chan struct{}
	closing       chan struct{}
	// reqPool recycles write requests with their answer channels (see
	// submit).
	reqPool sync.Pool

	// lifecycle guards db against use after Close and during a reopen:
	// readers hold it shared, Close and reopen exclusively.
	lifecycle sync.RWMutex
	closed    bool
	closeOnce sync.Once
	closeErr  error

	// goroutines tracks the committer, the compactor, the prober and every
	// watcher.
	goroutines sync.WaitGroup

	// index is owned by the committer goroutine (and by Open before it starts).
	index keyIndex

	// space refuses writes while the disk's free space is below the reserve.
	space *spaceGuard
	// fault, when set, refuses every write until the committer has reopened
	// pebble (disk.go).
	fault atomic.Pointer[fault]
	// writeMu serialises the pebble writes of the committer and the
	// compactor, each made only while no fault is set: pebble panics,
	// holding its commit lock, on a write to a WAL that failed before.
	writeMu sync.Mutex
	// reopenReqs carries the prober's requests to reopen pebble to the
	// committer, which owns the index a reopen rebuilds.
	reopenReqs chan chan error
	// abortReplays is closed when a reopen starts: replaying watchers drop
	// their snapshot of the old DB and replay again from the new one. It is
	// replaced under lifecycle held exclusively.
	abortReplays chan struct{}
	// replays counts the watchers reading a snapshot; Add is called under
	// lifecycle held shared, Wait under it held exclusively.
	replays sync.WaitGroup

	// mu orders publishing a batch (rev, watchers) against a watcher's switch
	// from replay to live events.
	mu       sync.Mutex
	watchers map[*watcher]chan []storage.Event
	// prevWatchers counts the watchers in watchers that want previous
	// values; guarded by mu.
	prevWatchers int
	// rev is the newest acknowledged revision; written under mu, read freely.
	// Reads never show a later one (see ackedView).
	rev       atomic.Int64
	compacted atomic.Int64
	// compactMu serialises compactions.
	compactMu sync.Mutex
	// swept is the revision up to which compaction has swept the log (see
	// Compact); guarded by compactMu.
	swept int64
	// samples are the compactor's (time, revision) samples, also persisted
	// (compact.go); owned by the compactor goroutine after Open.
	samples []revisionSample
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
// disk and starts its goroutines. The directory is made private (0700, its
// files 0600) whatever its mode was. With less than Options.ReservedBytes
// free, the store opens read-only: it serves reads, refuses writes, and
// becomes writable by itself once space is freed.
func Open(dir string, opts Options) (*Store, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("embedded store options: %w", err)
	}
	if err := makePrivate(dir); err != nil {
		return nil, fmt.Errorf("embedded store in %s: %w", dir, err)
	}
	s := &Store{
		dir:           dir,
		opts:          opts,
		reqs:          make(chan *writeReq, opts.MaxBatch),
		committerDone: make(chan struct{}),
		closing:       make(chan struct{}),
		index:         newKeyIndex(),
		watchers:      make(map[*watcher]chan []storage.Event),
		space:         newSpaceGuard(opts.fs, dir, opts.ReservedBytes),
		reopenReqs:    make(chan chan error),
		abortReplays:  make(chan struct{}),
	}
	readOnly := s.space.measure() != nil
	if s.db, err = s.openPebble(readOnly); err != nil {
		if readOnly {
			err = errors.Join(err, s.space.status())
		}
		return nil, fmt.Errorf("open pebble in %s: %w", dir, err)
	}
	if err := s.load(readOnly); err != nil {
		return nil, errors.Join(fmt.Errorf("load embedded store in %s: %w", dir, err), s.db.Close())
	}
	if err := makePrivate(dir); err != nil {
		return nil, errors.Join(fmt.Errorf("embedded store in %s: %w", dir, err), s.db.Close())
	}
	if readOnly {
		s.fault.Store(&fault{err: fmt.Errorf("opened read-only: %w", s.space.status()), since: time.Now()})
		opts.Logger.Warn("embedded store opened read-only: the disk is full; writes are refused until space is freed",
			"dir", dir, "err", s.space.status())
	}
	opts.Logger.Info("embedded store opened", "dir", dir, "revision", s.rev.Load(),
		"compacted", s.compacted.Load(), "keys", s.index.len(), "readOnly", readOnly)
	s.goroutines.Add(2)
	go s.commitLoop()
	go s.probeLoop()
	if opts.Compaction.Interval > 0 {
		s.goroutines.Add(1)
		go s.compactLoop()
	}
	return s, nil
}

// openPebble opens the pebble DB in s.dir; a Fatalf raised by pebble while
// opening (a MANIFEST it cannot write) is returned as an error.
func (s *Store) openPebble(readOnly bool) (*pebble.DB, error) {
	// Pebble's own messages carry one attribute saying so; a second
	// "component" would repeat the key the caller's logger already has.
	pebbleLog := s.opts.Logger.With("engine", "pebble")
	var db *pebble.DB
	err := recoverFatal(func() (err error) {
		o := &pebble.Options{
			FS:                 privateFS{FS: s.opts.fs},
			ReadOnly:           readOnly,
			Logger:             pebbleLogger{log: pebbleLog},
			FormatMajorVersion: pebble.FormatNewest,
			EventListener:      (&stallLog{log: pebbleLog}).listener(),
			MemTableSize:       memTableSize,
			// Writes stop only once this many memtables wait for their flush:
			// a flush falling behind for a moment (the CPU busy serving) then
			// delays nothing, instead of holding every writer.
			MemTableStopWritesThreshold: 4,
		}
		o.Experimental.SpanPolicyFunc = s.tableSpans
		db, err = pebble.Open(s.dir, o)
		return err
	})
	return db, err
}

// tableSpans is pebble's SpanPolicyFunc: a flush or compaction ends the
// sstable it writes at the end key returned for the table's first key.
// The store's tables therefore never mix namespaces, and log tables never
// straddle the compacted revision:
//
//   - The current states change with every write and every flush carries a
//     good part of them, so their tables overlap the ones below. Log
//     records sharing tables with them were rewritten at every level.
//     Alone, new records overlap nothing below (revisions only grow), and
//     pebble moves their tables down without rewriting them (out of L0 it
//     still compacts several together).
//   - A sweep deletes records at or below the compacted revision while the
//     records written meanwhile are above it: a table holding both would
//     span all the history in between.
//
// The cut at the compacted revision only places table boundaries: one
// placed at an outdated revision costs nothing but a smaller table.
//
// BenchmarkRenewals100k (taskset -c 1, go test -bench Renewals100k, three
// runs alternating with the code before, on a shared machine): pebble's
// compactions wrote 287 B per renewal instead of 606 (write amplification
// 2.34 -> 1.84); cpu-µs/write 16.2, 20.6, 16.2 -> 15.8, 15.7, 18.3.
func (s *Store) tableSpans(start []byte) (pebble.SpanPolicy, []byte, error) {
	if len(start) == logKeyLen && start[0] == nsLog {
		if c := s.compacted.Load(); int64(binary.BigEndian.Uint64(start[1:])) <= c {
			return pebble.SpanPolicy{}, logKey(c + 1), nil
		}
	}
	for _, ns := range []byte{nsLog, nsMeta, nsValue} {
		if len(start) == 0 || start[0] < ns {
			return pebble.SpanPolicy{}, []byte{ns}, nil
		}
	}
	return pebble.SpanPolicy{}, nil, nil
}

// load reads the meta keys and the compactor's samples, and rebuilds the
// index from the current values. A read-only store leaves the repair of
// old stores (restoreCurrentRecords) to its reopening.
func (s *Store) load(readOnly bool) error {
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
	if s.samples, err = loadSamples(s.db); err != nil {
		return err
	}
	s.rev.Store(rev)
	s.compacted.Store(compacted)
	s.swept = swept

	s.index.reset()
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
		s.index.set(key, indexEntry{modRev: c.modRev, createRev: c.createRev})
	}
	if err := it.Close(); err != nil {
		return fmt.Errorf("iterate values: %w", err)
	}
	if swept < compacted && !readOnly {
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
	if s.db == nil {
		s.lifecycle.RUnlock()
		return fmt.Errorf("%w: the store could not reopen its files after a disk fault", storage.ErrUnavailable)
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
	// Loaded before the snapshot: the snapshot holds at least this.
	acked := s.rev.Load()
	snap := s.db.NewSnapshot()
	defer snap.Close()
	kv, err := stateOf(snap, key)
	switch {
	case err == nil && kv.ModRevision <= acked:
		return kv, nil
	case err != nil && !errors.Is(err, storage.ErrNotFound):
		return kv, err
	}
	// Written, or deleted, by a batch not acknowledged (yet, or ever: a
	// batch that failed its sync stays in the memtable until a reopen).
	head, headErr := readMeta(snap, metaRevision)
	if headErr != nil {
		return storage.KeyValue{}, headErr
	}
	if head <= acked {
		return kv, err
	}
	past, pastErr := pastStates(snap, key, acked, head)
	if pastErr != nil {
		return storage.KeyValue{}, fmt.Errorf("get %s at revision %d: %w", key, acked, pastErr)
	}
	if p, ok := past[key]; ok {
		if p == nil {
			return storage.KeyValue{}, fmt.Errorf("get %s: %w", key, storage.ErrNotFound)
		}
		return *p, nil
	}
	return kv, err
}

// committedValue reads key's newest committed value from pebble; the caller
// keeps the db open (a reader holding acquire, or the committer).
func (s *Store) committedValue(key string) (storage.KeyValue, error) {
	snap := s.db.NewSnapshot()
	defer snap.Close()
	return stateOf(snap, key)
}

// stateOf reads key's newest value in snap. It reads one snapshot: between
// reading the state and the record it points at, a write could supersede
// that record and a compaction delete it.
func stateOf(snap *pebble.Snapshot, key string) (storage.KeyValue, error) {
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
		if s.db == nil {
			return
		}
		if err := s.db.Close(); err != nil && s.fault.Load() == nil {
			// A faulted DB fails to close its broken WAL: that is the
			// fault, already reported, not a new error.
			s.closeErr = fmt.Errorf("close pebble: %w", err)
		}
		s.opts.Logger.Info("embedded store closed", "revision", s.rev.Load())
	})
	return s.closeErr
}
