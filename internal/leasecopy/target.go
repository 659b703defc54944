package leasecopy

import (
	"context"
	"errors"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// Outcome is what copying or deleting one lease did to the target.
type Outcome int

const (
	// Created: the target had no such lease.
	Created Outcome = iota
	// Updated: the target's lease had other, older content.
	Updated
	// Unchanged: the target's content was already the source's (or a
	// lease to delete was already gone).
	Unchanged
	// TargetNewer: the target's copy is newer and was left alone.
	TargetNewer
	// Deleted: the lease was deleted on the target.
	Deleted
)

// Target is where leases are copied to. Its methods are called
// concurrently, never twice at once for one lease.
type Target interface {
	// Put makes the target's lease carry src's content unless it already
	// does or its own copy is newer (see the package doc).
	Put(ctx context.Context, src *coordinationv1.Lease) (Outcome, error)
	// Delete deletes the lease namespace/name from the target.
	Delete(ctx context.Context, namespace, name string) (Outcome, error)
	// Close releases the target's connections.
	Close() error
}

// errConflictsPersist is returned when a lease kept changing under every
// conditional write of one Put; the caller retries it later.
var errConflictsPersist = errors.New("the object kept changing on the target; will retry")

// casAttempts bounds the read-compare-write rounds of one Put before it
// gives up with errConflictsPersist.
const casAttempts = 5
