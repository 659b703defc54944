package objects

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// Store is the object layer over storage and the watch cache: it reads
// objects as fresh as a request needs (fresh.go) and turns storage errors
// into the Status a client gets (errors.go).
type Store struct {
	storage storage.Interface
	cache   *watchcache.Cache
	form    *Form
	// storageReads counts reads the cache could not answer (nil: none
	// counted), by verb, group and resource.
	storageReads *prometheus.CounterVec
}

// NewStore returns the object layer over st and cache, which holds st's
// objects decoded in form. storageReads, if set, counts the reads the cache
// could not answer.
func NewStore(st storage.Interface, cache *watchcache.Cache, form *Form, storageReads *prometheus.CounterVec) *Store {
	return &Store{storage: st, cache: cache, form: form, storageReads: storageReads}
}
