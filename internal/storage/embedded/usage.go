package embedded

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Usage is what a store holds, for sizing its disk: the logical bytes
// (pebble keys plus values) by kind, against the bytes its files take.
type Usage struct {
	// States and StateBytes: the current state of every live key.
	States, StateBytes int64
	// Records and RecordBytes: the log, i.e. the newest value of every
	// live key plus the retained history (compact.go keeps the records
	// after the compacted revision).
	Records, RecordBytes int64
	// MetaBytes: the revision counters and the compactor's samples.
	MetaBytes int64
	// DiskBytes is what pebble's files take on disk (sstables, WAL,
	// MANIFEST and obsolete files not yet deleted).
	DiskBytes uint64
}

// LogicalBytes is what the store needs without pebble's overhead.
func (u Usage) LogicalBytes() int64 { return u.StateBytes + u.RecordBytes + u.MetaBytes }

// Usage scans the store in one pebble snapshot and reports what it holds.
// It reads every key, so it is a diagnostic, not something to call on the
// serving path.
func (s *Store) Usage() (Usage, error) {
	snap := s.db.NewSnapshot()
	defer snap.Close()
	it, err := snap.NewIter(&pebble.IterOptions{})
	if err != nil {
		return Usage{}, fmt.Errorf("scan store: %w", err)
	}
	var u Usage
	for valid := it.First(); valid; valid = it.Next() {
		k := it.Key()
		n := int64(len(k) + len(it.Value()))
		switch k[0] {
		case nsValue:
			u.States++
			u.StateBytes += n
		case nsLog:
			u.Records++
			u.RecordBytes += n
		default:
			u.MetaBytes += n
		}
	}
	if err := it.Close(); err != nil {
		return Usage{}, fmt.Errorf("scan store: %w", err)
	}
	u.DiskBytes = s.db.Metrics().DiskSpaceUsage()
	return u, nil
}
