package embedded

import (
	"errors"
	"fmt"
	"time"
)

// reopen closes the faulted pebble DB and opens it again read-write, on
// the committer goroutine (which owns the index a reopen rebuilds), once
// the prober found the disk writable (disk.go). Readers wait for it;
// replaying watchers give up their snapshot of the old DB and replay from
// the new one.
//
// Every acknowledged write was synced, so the reopened DB has it. The
// batch whose sync failed was not acknowledged but may have reached the
// disk: its revisions then exist, and the live watchers, which never saw
// them, are detached to replay them from the log.
func (s *Store) reopen() error {
	close(s.abortReplays)
	s.lifecycle.Lock()
	defer s.lifecycle.Unlock()
	s.abortReplays = make(chan struct{})
	if s.closed {
		return ErrClosed
	}
	s.replays.Wait()
	acked := s.rev.Load()
	if s.db != nil {
		if err := s.db.Close(); err != nil {
			// The broken WAL fails to close: that is the fault itself.
			s.opts.Logger.Debug("closing the faulted pebble DB", "err", err)
		}
		s.db = nil
	}
	db, err := s.openPebble(false)
	if err != nil {
		s.reopenReadOnly()
		return fmt.Errorf("reopen pebble in %s: %w", s.dir, err)
	}
	s.db = db
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(false); err != nil {
		err = errors.Join(fmt.Errorf("reload embedded store in %s: %w", s.dir, err), s.db.Close())
		s.db = nil
		s.rev.Store(acked)
		s.reopenReadOnly()
		return err
	}
	switch rev := s.rev.Load(); {
	case rev < acked:
		// Cannot happen while fsync keeps its word: say so loudly.
		s.opts.Logger.Error("embedded store reopened without acknowledged writes", "acknowledged", acked, "found", rev)
	case rev > acked:
		s.opts.Logger.Warn("the batch that failed its sync reached the disk; publishing it", "from", acked+1, "to", rev)
		for w, live := range s.watchers {
			s.removeLocked(w)
			close(live)
		}
	}
	_ = s.space.measure()
	if f := s.fault.Swap(nil); f != nil {
		s.opts.Logger.Info("embedded store reopened after a disk fault; writes accepted again",
			"revision", s.rev.Load(), "refusedFor", time.Since(f.since).String())
	}
	return nil
}

// reopenReadOnly gives readers a DB again after a failed reopen, if one can
// be opened read-only; the store stays faulted and the prober retries. The
// caller holds lifecycle exclusively and s.db is nil.
func (s *Store) reopenReadOnly() {
	db, err := s.openPebble(true)
	if err != nil {
		s.opts.Logger.Error("embedded store cannot open its files even read-only; reads fail until a reopen succeeds", "err", err)
		return
	}
	s.db = db
}
