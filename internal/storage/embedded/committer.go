package embedded

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/leasehold/leasehold/internal/storage"
)

type writeOp uint8

const (
	opCreate writeOp = iota + 1
	opUpdate
	opDelete
)

// writeReq is one write waiting for the committer. done is buffered so the
// committer never waits for the writer to read its answer.
type writeReq struct {
	ctx      context.Context
	op       writeOp
	key      string
	value    []byte
	expected int64
	done     chan writeResult
}

type writeResult struct {
	rev  int64
	prev storage.KeyValue
	err  error
}

// Create implements storage.Interface.
func (s *Store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	res := s.submit(ctx, opCreate, key, value, 0)
	return res.rev, res.err
}

// Update implements storage.Interface.
func (s *Store) Update(ctx context.Context, key string, expectedRevision int64, value []byte) (int64, error) {
	res := s.submit(ctx, opUpdate, key, value, expectedRevision)
	return res.rev, res.err
}

// Delete implements storage.Interface.
func (s *Store) Delete(ctx context.Context, key string, expectedRevision int64) (storage.KeyValue, int64, error) {
	res := s.submit(ctx, opDelete, key, nil, expectedRevision)
	return res.prev, res.rev, res.err
}

// submit hands a write to the committer and waits for its answer. Once the
// committer has taken the request the wait is unconditional: the answer comes
// within one batch, and returning early would leave the caller unsure whether
// the write happened.
//
// The request is queued (Store.reqs) without asking ctx for its Done
// channel, and waits there as a taken one does: the committer checks
// ctx.Err before it applies the write (apply), so a write whose deadline
// or client went while it was queued is answered with that error, within
// two batches. Only when a whole batch is queued already does submit wait
// for room on ctx.Done. A request's Done channel is what an API request's
// deadline costs (request.WithDeadline builds its timer for the first
// call to Done), and with an unbuffered hand-off every write that came
// while the committer was busy asked for it. The queue also spares the
// writer a wake-up: it goes on at once to wait for its answer, instead of
// being woken once by the committer taking its request and again by the
// answer.
//
// Requests are recycled: the committer answers each request it takes
// exactly once and touches it no more after that send, so once submit has
// the answer (or the request was never queued) the request and its
// buffered, now empty, answer channel are free. That saves a renewal two
// allocations (BenchmarkUpdateParallel64, whose writers build their keys
// with one Sprintf: 4 -> 1 allocs/op, 468 -> 181 B/op). A request left in
// the queue by an exiting committer is not recycled: the queue still
// holds it.
func (s *Store) submit(ctx context.Context, op writeOp, key string, value []byte, expected int64) writeResult {
	if err := ctx.Err(); err != nil {
		return writeResult{err: err}
	}
	req, _ := s.reqPool.Get().(*writeReq)
	if req == nil {
		req = &writeReq{done: make(chan writeResult, 1)}
	}
	req.ctx, req.op, req.key, req.expected = ctx, op, key, expected
	if op != opDelete {
		// The value outlives the call (watchers get it) without a copy:
		// callers hand it over (storage.Interface), and copying every
		// written value was 6% of a renewing server's allocations.
		req.value = value
	}
	select {
	case s.reqs <- req:
	default:
		select {
		case s.reqs <- req:
		case <-s.closing:
			s.recycle(req)
			return writeResult{err: ErrClosed}
		case <-ctx.Done():
			s.recycle(req)
			return writeResult{err: ctx.Err()}
		}
	}
	select {
	case res := <-req.done:
		s.recycle(req)
		return res
	case <-s.committerDone:
		// The committer answered every request it took before it exited.
		select {
		case res := <-req.done:
			s.recycle(req)
			return res
		default:
			return writeResult{err: ErrClosed}
		}
	}
}

// recycle returns a request whose answer, if any, has been received, with
// nothing left in it that would keep its caller's memory alive.
func (s *Store) recycle(req *writeReq) {
	done := req.done
	*req = writeReq{done: done}
	s.reqPool.Put(req)
}

// gatherYields is how many times the committer yields the processor when no
// further request is waiting, before it commits what it has. Each fsync
// costs kernel CPU and disk time whatever the batch size, and with the
// committer running as soon as one request arrives, handlers that were a
// few microseconds from submitting missed the batch: a yield lets runnable
// handlers reach submit first. Measured with 64 renewing clients: one yield
// took the mean batch from 10.4 to 17.5 writes and two to 20.1 (fsyncs/s
// about halved); with nothing else runnable a yield returns at once.
const gatherYields = 2

// commitLoop is the committer goroutine: it takes the first request, waits
// out Options.CommitSpacing if the previous batch held several writes
// (spacing.go), gathers every request then waiting (up to MaxBatch),
// yielding up to gatherYields times for more, and commits them together.
func (s *Store) commitLoop() {
	defer s.goroutines.Done()
	defer close(s.committerDone)
	c := newCommitter(s)
	batch := make([]*writeReq, 0, s.opts.MaxBatch)
	var spacer commitSpacer
	for {
		// Once Close has begun, queued writes are left to their writers
		// (ErrClosed, see submit) rather than committed.
		select {
		case <-s.closing:
			return
		default:
		}
		select {
		case req := <-s.reqs:
			batch = append(batch, req)
		case done := <-s.reopenReqs:
			done <- s.reopen()
			continue
		case <-s.closing:
			return
		}
		if wait := spacer.wait(s.opts.CommitSpacing, time.Now()); wait > 0 && !s.sleepUnlessClosing(wait) {
			// Close began while the batch waited: its writes are answered
			// ErrClosed by their writers, as queued ones are.
			return
		}
		yields := 0
	gather:
		for len(batch) < s.opts.MaxBatch {
			select {
			case req := <-s.reqs:
				batch = append(batch, req)
			default:
				if yields == gatherYields {
					break gather
				}
				yields++
				runtime.Gosched()
			}
		}
		start := time.Now()
		spacer.started(start, len(batch))
		c.commit(batch, start)
		clear(batch)
		batch = batch[:0]
	}
}

// pendingEntry is a key's state as changed earlier in the batch being built.
type pendingEntry struct {
	exists bool
	indexEntry
	// value is the value written earlier in the batch; nil for a state read
	// from the index, which keeps no values.
	value []byte
}

// committer holds the committer goroutine's scratch state, reused between
// batches.
type committer struct {
	s       *Store
	pending map[string]pendingEntry
	// broken is set when staging a write into the batch failed; the batch
	// is then half-built and must not be committed.
	broken  error
	results []writeResult
	// onStaged[i] is true when results[i] is a refusal decided against a
	// write staged earlier in the batch (a create of a key the batch
	// creates, an update at a revision it replaced): if the batch is not
	// committed, that write never happened, and neither did the verdict.
	onStaged []bool
	events   []storage.Event
	// prevRevs[i] is the revision events[i] replaced (0 for a create).
	prevRevs []int64
	// record is the buffer log records are encoded into. A fresh one per
	// write was 5% of a renewing server's allocations.
	record []byte
	// currents, vkey and state are stageCurrents' scratch.
	currents []stagedCurrent
	vkey     []byte
	state    [16]byte
}

// stagedCurrent is a key the batch wrote and its state after the batch.
type stagedCurrent struct {
	key string
	pendingEntry
}

func newCommitter(s *Store) *committer {
	return &committer{s: s, pending: make(map[string]pendingEntry)}
}

// current returns key's state as of the batch being built.
func (c *committer) current(key string) (pendingEntry, error) {
	if p, ok := c.pending[key]; ok {
		return p, nil
	}
	e, ok := c.s.index.get(key)
	if !ok {
		return pendingEntry{}, nil
	}
	return pendingEntry{exists: true, indexEntry: e}, nil
}

// stageCurrents adds to b the current state of every key the batch wrote
// (its final state, when the batch wrote a key more than once), in key
// order, after the log records and the meta revision.
//
// Pebble inserts a batch's keys into its memtable skiplist one after the
// other, starting each search from where the previous insert left off when
// that still brackets the key. Written write by write, a batch alternated
// between the log's end ('l' + revision) and a lease's current state ('v' +
// key) far away, so every insert searched the skiplist from the top. In
// ascending order the log records append where the previous one ended, and
// the current states search from the level where their neighbour's splice
// still holds. The memtable insert's share of serve's CPU profile under
// bench max (typed client, 1,000 leases, PIN=1, two alternating rounds of
// 20 s on a loaded machine) went from 7.2% and 5.4% (the skiplist search
// the second-largest function) to 5.0% and 4.2%; what remains is the
// current states' search among their earlier versions.
func (c *committer) stageCurrents(b *pebble.Batch) error {
	c.currents = c.currents[:0]
	for key, p := range c.pending {
		c.currents = append(c.currents, stagedCurrent{key: key, pendingEntry: p})
	}
	slices.SortFunc(c.currents, func(x, y stagedCurrent) int { return strings.Compare(x.key, y.key) })
	defer clear(c.currents) // the keys and values are the requests'
	for _, sc := range c.currents {
		c.vkey = appendValueKey(c.vkey[:0], sc.key)
		var err error
		if sc.exists {
			putCurrent(&c.state, sc.modRev, sc.createRev)
			err = b.Set(c.vkey, c.state[:], nil) // Set copies key and value
		} else {
			err = b.Delete(c.vkey, nil)
		}
		if err != nil {
			return fmt.Errorf("stage the current state of %s: %w", sc.key, err)
		}
	}
	return nil
}

// maxKeptRecord bounds the record buffer the committer keeps between writes.
const maxKeptRecord = 64 << 10

// commit checks, writes, syncs, publishes and acknowledges one batch,
// which started at start (OnCommit's duration is measured from it).
func (c *committer) commit(reqs []*writeReq, start time.Time) {
	s := c.s
	if f := s.fault.Load(); f != nil {
		// Not even a precondition is checked: pebble may hold a batch
		// that the index does not.
		answer(reqs, nil, f.err)
		return
	}
	clear(c.pending)
	c.broken = nil
	c.results = c.results[:0]
	c.onStaged = c.onStaged[:0]
	// events is handed to watchers, who keep it: never reuse its array.
	c.events = make([]storage.Event, 0, len(reqs))
	c.prevRevs = c.prevRevs[:0]
	b := s.db.NewBatch()
	defer b.Close()
	rev := s.rev.Load()
	for _, req := range reqs {
		_, staged := c.pending[req.key]
		res := c.apply(b, req, rev+1)
		if res.err == nil {
			rev = res.rev
		}
		c.results = append(c.results, res)
		c.onStaged = append(c.onStaged, staged && res.err != nil)
	}
	if c.broken != nil {
		answer(reqs, c.refusedResults(), c.broken)
		return
	}
	if len(c.events) > 0 {
		err := b.Set(metaRevision, encodeInt64(rev), nil)
		if err == nil {
			err = c.stageCurrents(b)
		}
		if err == nil {
			err = s.space.allow(len(b.Repr()))
		}
		// A crash here loses the batch: none of its writes was
		// acknowledged, and none may show after a restart. The robustness
		// suite's build turns this comment (gofail) into a failpoint.
		// gofail: var beforeCommitSync struct{}
		if err == nil {
			err = s.writeSynced(b)
		}
		if err == nil {
			c.observeCommit(b.CommitStats())
		}
		if err != nil {
			answer(reqs, c.refusedResults(), fmt.Errorf("commit batch of %d writes: %w", len(c.events), err))
			return
		}
		// A crash here keeps the batch (it is synced) though none of its
		// writes was acknowledged nor seen by a watcher: after a restart
		// every one of them shows, at its revision, and watchers replay it.
		// gofail: var afterCommitSync struct{}
		for key, p := range c.pending {
			if p.exists {
				s.index.set(key, p.indexEntry)
			} else {
				s.index.delete(key)
			}
		}
		s.publish(rev, c.events, c.prevRevs)
		if s.opts.OnCommit != nil {
			s.opts.OnCommit(len(c.events), time.Since(start))
		}
	}
	for i, req := range reqs {
		req.done <- c.results[i]
	}
}

// slowCommit is the commit time past which the committer logs where the
// time went: every writer waits behind a slow commit.
const slowCommit = 100 * time.Millisecond

// observeCommit reports the WAL sync wait of a committed batch and logs the
// breakdown of a slow one, so that a latency tail can be traced to the
// fsync, a memtable or L0 write stall, a WAL rotation or pebble's queues.
func (c *committer) observeCommit(st pebble.BatchCommitStats) {
	if c.s.opts.OnSyncWait != nil {
		c.s.opts.OnSyncWait(st.CommitWaitDuration)
	}
	if st.TotalDuration < slowCommit {
		return
	}
	c.s.opts.Logger.Warn("slow group commit", "total", st.TotalDuration.String(),
		"syncWait", st.CommitWaitDuration.String(), "walQueueWait", st.WALQueueWaitDuration.String(),
		"semaphoreWait", st.SemaphoreWaitDuration.String(), "memtableStall", st.MemTableWriteStallDuration.String(),
		"l0Stall", st.L0ReadAmpWriteStallDuration.String(), "walRotation", st.WALRotationDuration.String())
}

// refusedResults is results for a batch that is not committed: a verdict
// decided against a staged write is dropped, so that its request gets the
// batch's error like the writes it was decided against.
func (c *committer) refusedResults() []writeResult {
	for i, staged := range c.onStaged {
		if staged {
			c.results[i] = writeResult{}
		}
	}
	return c.results
}

// answer answers every request with err, except those whose result (in
// results, if not nil) is already an error of their own.
func answer(reqs []*writeReq, results []writeResult, err error) {
	for i, req := range reqs {
		if results != nil && results[i].err != nil {
			req.done <- results[i]
			continue
		}
		req.done <- writeResult{err: err}
	}
}

// writeSynced commits b with a WAL sync unless the store is faulted. A
// failure faults the store: the batch may be in pebble's memtable without
// being durable, and a DB whose WAL failed fails every later write, so
// nothing more is written to it until reopen (disk.go).
func (s *Store) writeSynced(b *pebble.Batch) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if f := s.fault.Load(); f != nil {
		return f.err
	}
	if err := recoverFatal(func() error { return b.Commit(pebble.Sync) }); err != nil {
		return s.markFaulted(err)
	}
	return nil
}

// apply checks req's precondition against the batch's view and, if it holds,
// adds the write at revision rev to b.
func (c *committer) apply(b *pebble.Batch, req *writeReq, rev int64) writeResult {
	if err := req.ctx.Err(); err != nil {
		return writeResult{err: err}
	}
	cur, err := c.current(req.key)
	if err != nil {
		return writeResult{err: err}
	}
	rec := logRecord{key: req.key}
	next := pendingEntry{}
	switch req.op {
	case opCreate:
		if cur.exists {
			return writeResult{err: fmt.Errorf("create %s: %w", req.key, storage.ErrKeyExists)}
		}
		rec.typ, rec.value, rec.createRev = storage.EventPut, req.value, rev
		next = pendingEntry{exists: true, indexEntry: indexEntry{modRev: rev, createRev: rev}, value: req.value}
	case opUpdate:
		if !cur.exists {
			return writeResult{err: fmt.Errorf("update %s: %w", req.key, storage.ErrNotFound)}
		}
		if cur.modRev != req.expected {
			return writeResult{err: fmt.Errorf("update %s at revision %d, found %d: %w",
				req.key, req.expected, cur.modRev, storage.ErrConflict)}
		}
		rec.typ, rec.value, rec.createRev = storage.EventPut, req.value, cur.createRev
		next = pendingEntry{exists: true, indexEntry: indexEntry{modRev: rev, createRev: cur.createRev}, value: req.value}
	case opDelete:
		if !cur.exists {
			return writeResult{err: fmt.Errorf("delete %s: %w", req.key, storage.ErrNotFound)}
		}
		if req.expected != 0 && cur.modRev != req.expected {
			return writeResult{err: fmt.Errorf("delete %s at revision %d, found %d: %w",
				req.key, req.expected, cur.modRev, storage.ErrConflict)}
		}
		if cur.value == nil {
			// The caller gets the deleted value back, and watchers see it
			// as the delete's previous value.
			kv, err := c.s.committedValue(req.key)
			if err != nil {
				return writeResult{err: err}
			}
			cur.value = kv.Value
		}
		rec.typ, rec.createRev = storage.EventDelete, cur.createRev
	default:
		return writeResult{err: errors.New("unknown write operation")}
	}
	if cur.exists {
		rec.prevModRev, rec.prevValue = cur.modRev, cur.value
	}

	// The key's current state goes into the batch once it is complete
	// (stageCurrents), not here.
	c.record = rec.appendTo(c.record[:0])
	werr := b.Set(logKey(rev), c.record, nil)
	if cap(c.record) > maxKeptRecord {
		c.record = nil // one huge object need not stay allocated
	}
	if werr != nil {
		c.broken = fmt.Errorf("stage write of %s: %w", req.key, werr)
		return writeResult{err: c.broken}
	}
	c.pending[req.key] = next
	c.events = append(c.events, rec.event(rev))
	c.prevRevs = append(c.prevRevs, rec.prevModRev)
	res := writeResult{rev: rev}
	if req.op == opDelete {
		res.prev = storage.KeyValue{Key: req.key, Value: cur.value, ModRevision: cur.modRev, CreateRevision: cur.createRev}
	}
	return res
}
