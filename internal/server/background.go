package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
)

// background is the work that runs while the server serves: the store
// probe, the audit log, the watch cache, the token file and RBAC policy
// watches and the controllers. It shares one context, which Run ends after
// the HTTP server has drained (stop), and stop returns once every
// goroutine started on it has.
type background struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newBackground() *background {
	ctx, cancel := context.WithCancel(context.Background())
	return &background{ctx: ctx, cancel: cancel}
}

// run starts f on the background context.
func (b *background) run(f func(ctx context.Context)) {
	b.wg.Go(func() { f(b.ctx) })
}

// stop ends the background context and waits for every goroutine.
func (b *background) stop() {
	b.cancel()
	b.wg.Wait()
}

// startBackground starts the background work the API needs, and returns
// once the watch cache is ready and the RBAC policy synced (or ctx ended),
// so that the first request is served from a full cache and a current
// policy.
func startBackground(ctx context.Context, bg *background, log *slog.Logger, probe *storeProbe, objs *objectLayer, acc *access, api *apiParts) error {
	bg.run(probe.run)
	if api.auditLog != nil {
		bg.run(api.auditLog.Run)
	}
	bg.run(func(ctx context.Context) {
		if err := objs.cache.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("watch cache stopped", "err", err)
		}
	})
	if err := objs.cache.WaitReady(ctx); err != nil {
		return fmt.Errorf("waiting for the watch cache: %w", err)
	}
	bg.run(func(ctx context.Context) {
		if err := acc.authenticator.Run(ctx); err != nil && ctx.Err() == nil {
			log.Error("token file watch stopped", "err", err)
		}
	})
	bg.run(func(ctx context.Context) {
		if err := acc.run(ctx); err != nil && ctx.Err() == nil {
			log.Error("RBAC policy watch stopped", "err", err)
		}
	})
	if err := acc.waitSynced(ctx); err != nil {
		return fmt.Errorf("waiting for the RBAC policy: %w", err)
	}
	return nil
}
