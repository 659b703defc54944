package watchcache

import "fmt"

// TooOldError: the watch asked for changes after a revision whose successors
// have already left the window. The API answers 410 Expired with Error() as
// the message, which is exactly Kubernetes' "too old resource version: R (O)".
type TooOldError struct {
	Requested int64
	// Oldest is OldestRevision() at the time: the oldest revision still kept.
	Oldest int64
}

func (e *TooOldError) Error() string {
	return fmt.Sprintf("too old resource version: %d (%d)", e.Requested, e.Oldest-1)
}

// TooNewError: the watch asked for a revision the cache did not reach within
// Options.TooNewWait. The API answers 504 with retryAfterSeconds 1 and Error()
// as the message, Kubernetes' "Too large resource version: R, current: C".
type TooNewError struct {
	Requested int64
	Current   int64
}

func (e *TooNewError) Error() string {
	return fmt.Sprintf("Too large resource version: %d, current: %d", e.Requested, e.Current)
}
