package rbac

import (
	"context"
	"sync/atomic"
)

// Builder holds the Policy requests read and rebuilds it after each burst
// of changes to the RBAC objects, for any Source whatever it reads the
// objects from (the server's watch cache, a cluster's informers). Changes
// only mark a rebuild due, so a burst of them costs one NewPolicy, and
// requests read the last Policy built without locking. The zero value is
// not usable; build it with NewBuilder.
type Builder struct {
	current atomic.Pointer[Policy]
	dirty   chan struct{} // a change awaits a rebuild (capacity 1)
}

// NewBuilder returns a Builder whose Policy is empty (it allows nothing)
// until its first rebuild.
func NewBuilder() *Builder {
	b := &Builder{dirty: make(chan struct{}, 1)}
	b.current.Store(empty)
	return b
}

// Policy is the last Policy built.
func (b *Builder) Policy() *Policy { return b.current.Load() }

// Changed marks a rebuild due. It never blocks.
func (b *Builder) Changed() {
	select {
	case b.dirty <- struct{}{}:
	default: // a rebuild is already due; it will see this change too
	}
}

// Run rebuilds the Policy after each Changed until ctx ends. objects
// collects what to build from; when it answers false the last Policy is
// kept rather than a partial one used. built, if not nil, runs after each
// Policy stored, so the caller can tell when one holds what it waited for.
func (b *Builder) Run(ctx context.Context, objects func() (Objects, bool), built func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.dirty:
		}
		o, ok := objects()
		if !ok {
			continue
		}
		b.current.Store(NewPolicy(o))
		if built != nil {
			built()
		}
	}
}
