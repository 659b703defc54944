// Package controller holds what Leasehold's in-process controllers share:
// the dependencies `serve` hands them. Each controller lives in its own
// sub-package with a Run(ctx) that returns when ctx ends, after every
// goroutine it started has stopped.
//
// Controllers read through the watch cache (no HTTP, no copies: objects are
// shared and must be deep-copied before changing) and write through the
// loopback client, so their writes take the same validated request path as
// every client's, without TLS or sockets.
package controller

import (
	"context"
	"log/slog"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// Context is what a controller gets from the server.
type Context struct {
	// Cache holds every object the server serves; watch it with a resource's
	// KeyPrefix.
	Cache *watchcache.Cache
	// Client is the loopback client (user system:apiserver, group system:masters).
	Client kubernetes.Interface
	// Resources are the served resources (for generic controllers such as
	// the garbage collector).
	Resources *registry.Set
	Logger    *slog.Logger
	Now       func() time.Time
}

// Runner is a controller started by `serve`.
type Runner interface {
	// Name is used in logs.
	Name() string
	// Run works until ctx ends.
	Run(ctx context.Context) error
}
