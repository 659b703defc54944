package server

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/intern"
	"github.com/leasehold/leasehold/internal/objects"
	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/served"
	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// objectLayer is what the API serves objects from: the scheme, the stored
// resources, the intern table and the watch cache over the store.
type objectLayer struct {
	scheme *runtime.Scheme
	// stored is every stored resource: served.Stored on its own,
	// served.Cluster behind a cluster. The access reviews, which answer
	// with the authorizer and store nothing, join them in the API step
	// (api.go), since the authorizer reads RBAC objects from this cache.
	stored *registry.Set
	// intern is shared by the cache's decoder and the API server, which
	// hands the objects it writes to the cache interned
	// (apiserver.Config.Intern).
	intern *intern.Table
	// cache runs with the background work (background.go).
	cache *watchcache.Cache
}

// openObjects builds the object layer over store; behindCluster selects
// the resources served behind a cluster (cluster.go).
func openObjects(cfg Config, store storage.Interface, behindCluster bool) (*objectLayer, error) {
	scheme, err := served.NewScheme()
	if err != nil {
		return nil, err
	}
	stored := served.Stored(time.Now)
	if behindCluster {
		stored = served.Cluster(time.Now)
	}
	table := intern.New()
	cache := watchcache.New(store, objects.NewForm(scheme, stored, table).CacheOptions(watchcache.Options{
		Prefix:           "/registry/",
		ColdAfter:        cfg.WatchCacheColdAfter,
		Window:           cfg.WatchCacheWindow,
		BookmarkInterval: cfg.BookmarkInterval,
		WatcherBuffer:    1000,
		Logger:           cfg.Logger,
	}))
	return &objectLayer{scheme: scheme, stored: stored, intern: table, cache: cache}, nil
}
