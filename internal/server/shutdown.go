package server

import "context"

// shutdown stops serving gracefully: /readyz fails from now on, every
// watch ends, and the HTTP server stops accepting and lets in-flight
// requests finish, for at most cfg.ShutdownTimeout before it closes what
// is left. It returns once the serving goroutine has. Run then stops the
// background work (the controllers and the cache), closes the audit log,
// and closes the store last.
func shutdown(cfg Config, s *serving, api *apiParts) {
	cfg.Logger.Info("shutting down")
	api.ready.set(false)
	close(api.stopWatches)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		cfg.Logger.Error("graceful shutdown incomplete", "err", err)
		_ = s.srv.Close()
	}
	<-s.done
}
