package leasecopy

import (
	"fmt"
	"sync/atomic"
)

// Stats counts outcomes; its fields are updated by the workers and read by
// the progress printer concurrently.
type Stats struct {
	Copied, Updated, Unchanged, TargetNewer, Deleted, Errors atomic.Int64
}

// count records one outcome.
func (s *Stats) count(o Outcome) {
	switch o {
	case Created:
		s.Copied.Add(1)
	case Updated:
		s.Updated.Add(1)
	case Unchanged:
		s.Unchanged.Add(1)
	case TargetNewer:
		s.TargetNewer.Add(1)
	case Deleted:
		s.Deleted.Add(1)
	}
}

// total is every lease handled so far, failures included.
func (s *Stats) total() int64 {
	return s.Copied.Load() + s.Updated.Load() + s.Unchanged.Load() + s.TargetNewer.Load() + s.Deleted.Load() + s.Errors.Load()
}

// String is the counts as the progress and summary lines print them.
func (s *Stats) String() string {
	return fmt.Sprintf("copied %d, updated %d, unchanged %d, target newer %d, deleted %d, errors %d",
		s.Copied.Load(), s.Updated.Load(), s.Unchanged.Load(), s.TargetNewer.Load(), s.Deleted.Load(), s.Errors.Load())
}
