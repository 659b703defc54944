package server

import (
	"log/slog"
	"net/http"

	"github.com/leasehold/leasehold/internal/snapshot"
	"github.com/leasehold/leasehold/internal/storage"
)

// registerSnapshot serves the online backup (`leasehold snapshot save
// --kubeconfig`): a consistent snapshot of store, streamed to members of
// system:masters (internal/snapshot.Handler).
func registerSnapshot(mux *http.ServeMux, store storage.Interface, log *slog.Logger) {
	mux.Handle(snapshot.Path, snapshot.Handler(store, log.With("component", "snapshot")))
}
