// Package storage defines the narrow key-value interface every Leasehold storage
// driver implements (the embedded one in storage/embedded, the etcd one in
// storage/etcd) and the helpers built on top of it.
//
// Invariants every driver keeps, checked by the shared conformance suite in
// storage/storagetest:
//
//   - The store has one global revision, a positive int64 that grows by exactly one
//     with every successful write (create, update or delete), as etcd's does. It is
//     what the API serves as resourceVersion.
//   - A write is acknowledged (its method returns nil) only once it is durable: a
//     crash of the process right after the return never loses it.
//   - Watch delivers every event after the requested revision, in revision order,
//     with no gaps and no duplicates, until its context ends or it is compacted
//     away; events older than the last compaction fail with ErrCompacted.
//   - Watch delivers events in batches: each receive is a non-empty slice of
//     events in revision order, as the driver has them (one group commit of
//     the embedded store, one watch response of etcd), so a busy store costs
//     its watcher one channel hand-over per batch, not per event. A batch is
//     shared between watchers and read-only.
//   - Values are opaque bytes: the driver never looks inside them.
package storage

import (
	"context"
	"errors"
)

// Errors drivers return. Callers test them with errors.Is; drivers may wrap them.
var (
	// ErrNotFound: the key does not exist (Get, Update, Delete).
	ErrNotFound = errors.New("key not found")
	// ErrKeyExists: Create found the key already present.
	ErrKeyExists = errors.New("key already exists")
	// ErrConflict: the key's current revision is not the expected one.
	ErrConflict = errors.New("revision precondition failed")
	// ErrCompacted: the revision asked for is older than the last compaction.
	ErrCompacted = errors.New("revision has been compacted")
	// ErrFutureRevision: the revision asked for has not been written yet.
	ErrFutureRevision = errors.New("revision is in the future")
	// ErrInsufficientStorage: a write was refused, not made, because the
	// disk under the store is full or its free space is below the reserve
	// the driver keeps for its own bookkeeping. Reads keep working; writes
	// succeed again once space is freed, without a restart. The API answers
	// it with 507 Insufficient Storage.
	ErrInsufficientStorage = errors.New("insufficient storage")
	// ErrUnavailable: a write was refused, not made, because the store is
	// recovering from a failed disk write (it reopens its files once the
	// disk accepts writes again). Reads keep working. The API answers it
	// with 503 Service Unavailable and a Retry-After.
	ErrUnavailable = errors.New("storage temporarily unavailable")
)

// HealthReporter is implemented by drivers that can say whether they accept
// writes. Health returns nil when they do, and otherwise an error naming the
// cause (wrapping ErrInsufficientStorage or ErrUnavailable); the server's
// /readyz reports it.
type HealthReporter interface {
	Health() error
}

// KeyValue is one stored key at one revision.
type KeyValue struct {
	Key   string
	Value []byte
	// ModRevision is the store revision of the write that produced this value.
	ModRevision int64
	// CreateRevision is the store revision of the create that started this
	// key's current life (a deleted and re-created key gets a new one).
	CreateRevision int64
}

// EventType says what a watch event did to its key.
type EventType int

const (
	// EventPut is a create or an update; Event.PrevValue is nil for a create.
	EventPut EventType = iota + 1
	// EventDelete removed the key; Event.PrevValue is the value it had.
	EventDelete
	// EventProgress changes nothing: it says that the watch has delivered
	// every event under its prefix with a revision <= Event.Revision (its
	// only field set), which may be newer than the last event when other
	// prefixes changed since (etcd's progress notification, KEP-1904). Only
	// watches opened WithProgressNotify get it, and only from drivers that
	// can tell.
	EventProgress
)

// Event is one change to one key.
type Event struct {
	Type EventType
	Key  string
	// Value is the new value (nil for EventDelete).
	Value []byte
	// PrevValue is the value before this event (nil for a create).
	PrevValue []byte
	// Revision is the store revision this event produced; for a put it equals
	// the new value's ModRevision.
	Revision int64
	// CreateRevision of the key's current life (of the deleted life for EventDelete).
	CreateRevision int64
}

// ListResult is one page of a List.
type ListResult struct {
	KVs []KeyValue
	// Revision is the store revision the page was read at.
	Revision int64
	// More is true when keys after the last returned one exist under the prefix.
	More bool
}

// ListOptions narrows a List.
type ListOptions struct {
	// Revision reads the state as of that revision; 0 reads the newest state.
	// Reading a compacted revision fails with ErrCompacted, one not yet written
	// with ErrFutureRevision.
	Revision int64
	// StartKey, when set, returns keys >= StartKey only (for paging).
	StartKey string
	// Limit caps the number of keys returned; 0 means no cap.
	Limit int
}

// WatchOption adjusts one Watch.
type WatchOption int

const (
	// WithoutPrevValue lets the driver leave Event.PrevValue nil, and a
	// delete's CreateRevision 0 (etcd has both only in the previous
	// value), for a caller that keeps the previous state itself (the watch
	// cache does): the drivers then need not read previous values back for
	// it.
	WithoutPrevValue WatchOption = iota + 1
	// WithProgressNotify asks for EventProgress events, for a caller
	// that must know when its view is as new as the store although
	// nothing under its prefix changed (the watch cache, for consistent
	// reads). A driver that cannot tell ignores it.
	WithProgressNotify
)

// ProgressRequester is implemented by drivers that can be asked for an
// EventProgress on every watch opened WithProgressNotify. Once
// RequestProgress returns nil, each such watch soon delivers an
// EventProgress at a revision at least as new as every write acknowledged
// before the call (or events past it). It fails with an error wrapping
// errors.ErrUnsupported where the store cannot report progress.
type ProgressRequester interface {
	RequestProgress(ctx context.Context) error
}

// WantsProgress reports whether a Watch called with opts asked for
// EventProgress events.
func WantsProgress(opts []WatchOption) bool {
	for _, o := range opts {
		if o == WithProgressNotify {
			return true
		}
	}
	return false
}

// WantsPrevValue reports whether a Watch called with opts must fill
// Event.PrevValue.
func WantsPrevValue(opts []WatchOption) bool {
	for _, o := range opts {
		if o == WithoutPrevValue {
			return false
		}
	}
	return true
}

// Interface is what a storage driver offers. Keys are strings like
// "/registry/leases/kube-node-lease/node-1"; List and Watch take a prefix and
// match keys that start with it. Every method is safe for concurrent use.
type Interface interface {
	// Get returns the newest value of key, or ErrNotFound.
	Get(ctx context.Context, key string) (KeyValue, error)
	// List returns the keys under prefix in ascending key order.
	List(ctx context.Context, prefix string, opts ListOptions) (ListResult, error)
	// Create writes key if it does not exist and returns the new revision.
	// The driver may keep value (for watchers, say): the caller must not
	// change it after the call.
	Create(ctx context.Context, key string, value []byte) (int64, error)
	// Update replaces key's value if its ModRevision equals expectedRevision
	// (ErrConflict otherwise, ErrNotFound if absent) and returns the new
	// revision. Like Create, it may keep value.
	Update(ctx context.Context, key string, expectedRevision int64, value []byte) (int64, error)
	// Delete removes key if its ModRevision equals expectedRevision, or
	// unconditionally when expectedRevision is 0. It returns the deleted value
	// and the revision of the delete.
	Delete(ctx context.Context, key string, expectedRevision int64) (KeyValue, int64, error)
	// Watch streams every event under prefix with a revision > fromRevision,
	// in batches (see the package invariants). The channel closes when ctx ends or the driver stops; a driver that must
	// end a watch early (compaction overtook a slow reader, shutdown) closes the
	// channel after sending nothing more, and the caller re-watches from the
	// last revision it saw. fromRevision older than the last compaction fails
	// with ErrCompacted. Events carry PrevValue unless opts include
	// WithoutPrevValue.
	Watch(ctx context.Context, prefix string, fromRevision int64, opts ...WatchOption) (<-chan []Event, error)
	// CurrentRevision is the revision of the newest acknowledged write.
	CurrentRevision(ctx context.Context) (int64, error)
	// Compact forgets history at or before revision: later List and Watch calls
	// for revisions < revision fail with ErrCompacted. Current values stay.
	Compact(ctx context.Context, revision int64) error
	// CompactedRevision is the revision of the last Compact (0 if none).
	CompactedRevision(ctx context.Context) (int64, error)
	// Close stops the driver; it waits for in-flight writes to finish.
	Close() error
}
