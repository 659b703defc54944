package apiserver

import (
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// secondStamps hands out managedFields timestamps, which have a resolution
// of one second: every renewal within the same second gets the same
// *metav1.Time. At 10,000 renewals a second that is one allocation a second
// instead of one a renewal, and 100,000 cached leases point at a handful of
// stamps instead of holding one each (a heap object the collector marks on
// every cycle). Sharing is safe because stored and cached objects are never
// mutated (watchcache's invariant); code that edits a managedFields entry
// edits a DeepCopy, which copies the Time.
type secondStamps struct{ last atomic.Pointer[metav1.Time] }

// at returns the stamp of now's second (UTC, without the monotonic reading).
func (s *secondStamps) at(now time.Time) *metav1.Time {
	t := now.UTC().Truncate(time.Second)
	if p := s.last.Load(); p != nil && p.Time.Equal(t) {
		return p
	}
	p := &metav1.Time{Time: t}
	s.last.Store(p)
	return p
}
