package objects

// fresh.go reads objects as fresh as a request needs: from the watch cache
// once it has caught up, from storage while it lags.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/storage"
)

// freshnessWait bounds how long a read waits for the cache to catch up.
const freshnessWait = 3 * time.Second

// Current returns the object at key, at least as new as minRV (< 0: as
// new as the store, a consistent read), or nil when there is none.
//
// The cache answers whenever it has caught up. When it lags (a burst of
// writes is still being decoded into it), the one key is read from storage
// instead, as kube-apiserver reads etcd for a GET without a resourceVersion
// and before every update: waiting for the cache would turn its lag into
// 504s on exactly the requests that write. Only a minRV newer than the store
// waits for the cache, and times out with Kubernetes' "Too large resource
// version".
func (s *Store) Current(ctx context.Context, res *registry.Resource, key string, minRV int64) (runtime.Object, error) {
	return s.current(ctx, res, key, minRV, true)
}

// current is Current; waitFuture false reads the store's newest state
// instead of waiting for a minRV the store has not reached: an update
// expects the object at minRV, and kube-apiserver, reading etcd, finds it
// elsewhere and answers the stale version's 409 (or 404 when it is gone)
// at once, not a 504 after the wait.
func (s *Store) current(ctx context.Context, res *registry.Resource, key string, minRV int64, waitFuture bool) (runtime.Object, error) {
	if minRV >= 0 && s.cache.Revision() >= minRV {
		return s.Cached(key), nil
	}
	storeRV, err := s.storage.CurrentRevision(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading current revision: %w", err)
	}
	if minRV < 0 || (minRV > storeRV && !waitFuture) {
		minRV = storeRV
	}
	switch {
	case s.cache.Revision() >= minRV:
		return s.Cached(key), nil
	case minRV > storeRV:
		if err := s.WaitFresh(ctx, minRV); err != nil {
			return nil, err
		}
		return s.Cached(key), nil
	}
	return s.stored(ctx, res, key)
}

// WaitFresh makes the cache at least as new as rv; rv < 0 means "as new as
// the store" (a consistent read).
func (s *Store) WaitFresh(ctx context.Context, rv int64) error {
	if rv < 0 {
		cur, err := s.storage.CurrentRevision(ctx)
		if err != nil {
			return fmt.Errorf("reading current revision: %w", err)
		}
		rv = cur
	}
	if s.cache.Revision() >= rv {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, freshnessWait)
	defer cancel()
	if err := s.cache.WaitForRevision(ctx, rv); err != nil {
		return TooLargeResourceVersion(rv, s.cache.Revision())
	}
	return nil
}

// Cached returns the cache's object at key, or nil.
func (s *Store) Cached(key string) runtime.Object {
	obj, ok := s.cache.Get(key)
	if !ok {
		return nil
	}
	return obj
}

// stored reads key's newest value from storage. The cache's object is
// reused when it is that same version (the cache lagged on other keys), so
// only a key written since costs a decode.
func (s *Store) stored(ctx context.Context, res *registry.Resource, key string) (runtime.Object, error) {
	if s.storageReads != nil {
		s.storageReads.WithLabelValues("get", res.GroupVersion.Group, res.Resource).Inc()
	}
	kv, err := s.storage.Get(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, StorageError(res, key[strings.LastIndexByte(key, '/')+1:], key, err)
	}
	if obj := s.Cached(key); obj != nil {
		if acc, err := meta.Accessor(obj); err == nil && acc.GetResourceVersion() == strconv.FormatInt(kv.ModRevision, 10) {
			return obj, nil
		}
	}
	return s.form.Decode(res, kv.Value, kv.ModRevision)
}
