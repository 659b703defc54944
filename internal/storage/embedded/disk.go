package embedded

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/leasehold/leasehold/internal/storage"
)

// Disk faults. Pebble treats a failed WAL write or sync, a failed WAL
// rotation and a failed MANIFEST write as fatal (its commit pipeline and
// version set cannot be unwound: pebble issues #1159 and #1792): it calls
// Logger.Fatalf, or panics, and a DB that failed a WAL write fails every
// later one. A failed sstable write (flush, compaction) is only a
// background error that pebble retries. So the store:
//
//   - keeps pebble away from a full disk: the committer refuses a batch
//     with storage.ErrInsufficientStorage while less than
//     Options.ReservedBytes are free (spaceGuard), so a disk filled by our
//     own writes or by anyone else stops writes before pebble's own work
//     (flushes, rotations) runs out of room. Nothing is written, so nothing
//     needs recovering: the next batch after space is freed commits.
//   - survives a fault it could not prevent (a disk filled between two
//     checks, EIO): a Fatalf raised by a commit the store makes itself is
//     recovered (recoverFatal), the writes of that batch answer an error
//     and were not acknowledged, and the store is faulted: it refuses every
//     write, reads go on from the DB as it is (limited to acknowledged
//     revisions, since the failed batch may sit in the memtable), and every
//     Options.ProbeInterval the prober checks the disk (free space and a
//     synced probe file). Once it takes writes, the committer closes and
//     reopens pebble, which replays the WAL: acknowledged writes were synced
//     and are there; the failed batch may be there too if its bytes reached
//     the disk, and is then published as if just committed.
//   - on a disk with less than the reserve free at start, opens pebble
//     read-only (no WAL, no MANIFEST written) and is faulted the same way
//     until space returns; if even that open fails, Open fails at once with
//     the reason.
//
// What is not survived: a fault raised on pebble's own goroutines (a
// MANIFEST write after a flush) or inside a WAL rotation panics the
// process; the reserve exists so that these never meet a full disk.

// pebbleFatal is the panic value of pebbleLogger.Fatalf.
type pebbleFatal struct{ msg string }

func (f pebbleFatal) Error() string {
	if strings.HasPrefix(f.msg, "pebble: ") {
		return f.msg
	}
	return "pebble: " + f.msg
}

// recoverFatal runs fn, a pebble write the store makes, and returns the
// pebble Fatalf it raised as an error. Other panics go on: they may leave
// pebble's locks held, and only a restart clears those.
func recoverFatal(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(pebbleFatal)
			if !ok {
				panic(r)
			}
			err = f
		}
	}()
	return fn()
}

// spaceGuard measures the free space of the store's file system against
// the reserve.
type spaceGuard struct {
	fs      vfs.FS
	dir     string
	reserve uint64 // 0: never refuse

	// low is the refusal of the last measurement (nil: space sufficed);
	// Health reads it.
	low atomic.Pointer[error]

	// Committer-owned: the bytes committed and the time since the last
	// measurement, which allow skips up to spaceCheckBytes and
	// spaceCheckEvery.
	written   int
	checkedAt time.Time
}

const (
	// spaceCheckBytes and spaceCheckEvery bound how much the committer
	// writes between two measurements, so that the reserve absorbs it; a
	// measurement (statfs) per batch cost the group commit about 1 µs.
	spaceCheckBytes = 1 << 20
	spaceCheckEvery = 100 * time.Millisecond
)

func newSpaceGuard(fs vfs.FS, dir string, reserved int64) *spaceGuard {
	return &spaceGuard{fs: fs, dir: dir, reserve: uint64(max(reserved, 0))}
}

// allow reports whether the committer may write a batch of n bytes: nil,
// or the storage.ErrInsufficientStorage to answer. A guard that refused
// measures again for every batch, so writes resume with the first batch
// after space returns.
func (g *spaceGuard) allow(n int) error {
	if g.reserve == 0 {
		return nil
	}
	g.written += n
	if g.low.Load() == nil && g.written < spaceCheckBytes && time.Since(g.checkedAt) < spaceCheckEvery {
		return nil
	}
	g.written, g.checkedAt = 0, time.Now()
	return g.measure()
}

// measure compares the free space with the reserve and records the result
// for Health.
func (g *spaceGuard) measure() error {
	err := g.check(g.reserve)
	if err == nil {
		g.low.Store(nil)
	} else {
		g.low.Store(&err)
	}
	return err
}

// check compares the free space with need. A file system that cannot say
// (statfs failing) is assumed to have room: pebble's own errors then report
// a full one.
func (g *spaceGuard) check(need uint64) error {
	if g.reserve == 0 {
		return nil
	}
	u, err := g.fs.GetDiskUsage(g.dir)
	if err != nil || u.AvailBytes >= need {
		return nil
	}
	return fmt.Errorf("%w: %s free on the file system of %s, below the %s the store keeps in reserve; writes resume once space is freed",
		storage.ErrInsufficientStorage, mib(u.AvailBytes), g.dir, mib(g.reserve))
}

// status is the last measurement's refusal, nil if space sufficed.
func (g *spaceGuard) status() error {
	if p := g.low.Load(); p != nil {
		return *p
	}
	return nil
}

func mib(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// fault is why a faulted store refuses writes.
type fault struct {
	err   error // wraps storage.ErrInsufficientStorage or storage.ErrUnavailable
	since time.Time
}

// markFaulted records the first fault: cause is what pebble reported. It
// returns the error writes get from now on.
func (s *Store) markFaulted(cause error) error {
	kind := storage.ErrUnavailable
	if isNoSpace(cause) || s.space.measure() != nil {
		kind = storage.ErrInsufficientStorage
	}
	f := &fault{
		err: fmt.Errorf("%w: a disk write failed (%v); writes are refused until the store has reopened its files, tried every %s",
			kind, cause, s.opts.ProbeInterval),
		since: time.Now(),
	}
	if s.fault.CompareAndSwap(nil, f) {
		s.opts.Logger.Error("embedded store refuses writes after a disk fault; reads go on", "err", cause)
		return f.err
	}
	return s.fault.Load().err
}

// isNoSpace reports whether err is, or (as pebble's Fatalf message) names,
// ENOSPC or a quota exceeded.
func isNoSpace(err error) bool {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, syscall.ENOSPC.Error()) || strings.Contains(msg, syscall.EDQUOT.Error())
}

// Health implements storage.HealthReporter: nil while writes are accepted,
// otherwise why they are refused.
func (s *Store) Health() error {
	if f := s.fault.Load(); f != nil {
		return fmt.Errorf("%w (since %s)", f.err, f.since.UTC().Format(time.RFC3339))
	}
	return s.space.status()
}

// probeFile is the file the prober writes and syncs to learn whether the
// disk takes writes again; pebble ignores files it did not name.
const probeFile = "LEASEHOLD-PROBE"

// probeBytes is what the probe writes: enough to need new blocks.
const probeBytes = 64 << 10

// probeWrite creates, fills, syncs and removes the probe file.
func (s *Store) probeWrite() error {
	name := s.opts.fs.PathJoin(s.dir, probeFile)
	f, err := s.opts.fs.Create(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	_, err = f.Write(make([]byte, probeBytes))
	if err == nil {
		err = f.Sync()
	}
	err = errors.Join(err, f.Close(), s.opts.fs.Remove(name))
	if err != nil {
		return fmt.Errorf("probe write in %s: %w", s.dir, err)
	}
	return nil
}

// probeLoop is the prober, owned by the Store and stopped by Close: while
// the store is faulted, it asks the committer to reopen pebble once the
// disk takes a synced write with the reserve free; while the reserve alone
// refuses writes, it measures again so that Health clears without waiting
// for a write.
func (s *Store) probeLoop() {
	defer s.goroutines.Done()
	t := time.NewTicker(s.opts.ProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-s.closing:
			return
		case <-t.C:
		}
		if s.fault.Load() == nil {
			if s.space.status() != nil {
				_ = s.space.measure()
			}
			continue
		}
		if err := s.space.measure(); err != nil {
			continue
		}
		if err := s.probeWrite(); err != nil {
			s.opts.Logger.Debug("disk still refuses writes", "err", err)
			continue
		}
		done := make(chan error, 1)
		select {
		case s.reopenReqs <- done:
		case <-s.closing:
			return
		}
		if err := <-done; err != nil {
			s.opts.Logger.Error("reopening the embedded store failed; retrying", "err", err)
		}
	}
}
