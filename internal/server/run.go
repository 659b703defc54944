package server

import (
	"context"
	"fmt"
	"os"
)

// Run serves until ctx ends, then shuts down gracefully: it stops accepting,
// ends watches, lets in-flight requests finish, stops the controllers and the
// cache, and closes the store. Each step is a function of its own file (see
// the package doc). Every goroutine a step starts belongs to the background
// work (bg) or to the serving (s); Run stops both, and closes the audit log
// and the store, before it returns.
func Run(ctx context.Context, cfg Config) error {
	cfg.defaults()
	log := cfg.Logger
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("creating data dir: %w", err)
	}
	tlsConfig, ca, err := setupTLS(cfg)
	if err != nil {
		return err
	}
	reg := newMetricsRegistry()

	store, err := openStorage(ctx, cfg, newStorageMetrics(reg))
	if err != nil {
		return err
	}
	defer closeStorage(store, log) // last: after everything that writes
	probe := newStoreProbe(store, len(cfg.EtcdServers) > 0)

	// Behind a cluster (cluster.go), the cluster authenticates, authorizes
	// and keeps everything but the leases.
	cl, err := openCluster(cfg, log)
	if err != nil {
		return err
	}
	objs, err := openObjects(cfg, store, cl != nil)
	if err != nil {
		return err
	}
	acc, err := openAccess(cfg, tlsConfig.ClientCAs, cl, objs, store)
	if err != nil {
		return err
	}
	api, err := openAPI(cfg, reg, store, probe, objs, acc)
	if err != nil {
		return err
	}
	if api.auditLog != nil {
		// After the HTTP server drained and the backend's Run (background
		// work) wrote what it buffered.
		defer closeAuditLog(api.auditLog, log)
	}

	bg := newBackground()
	defer bg.stop() // after the HTTP server drained
	if err := startBackground(ctx, bg, log, probe, objs, acc, api); err != nil {
		return err
	}
	if cl == nil {
		if err := startStandalone(ctx, bg, cfg, api.server, objs, probe, reg); err != nil {
			return err
		}
	}

	s, err := listen(cfg, reg, api.server, tlsConfig, ca, api.ready)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case err := <-s.done:
		return fmt.Errorf("serving: %w", err)
	}
	shutdown(cfg, s, api)
	return nil
}
