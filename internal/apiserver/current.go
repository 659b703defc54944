package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/storage"
)

// freshnessWait bounds how long a read waits for the cache to catch up.
const freshnessWait = 3 * time.Second

// parseRV parses a resourceVersion query value ("" → 0).
func parseRV(rv string) (int64, error) {
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", rv))
	}
	return n, nil
}

// readRV turns a get/list resourceVersion parameter into a waitFresh target:
// unset is a consistent read (-1), "0" any version (0), else not older than it.
func readRV(param string) (int64, error) {
	if param == "" {
		return -1, nil
	}
	return parseRV(param)
}

// getCurrent returns the object at key, at least as new as minRV (< 0: as
// new as the store, a consistent read), or nil when there is none.
//
// The cache answers whenever it has caught up. When it lags (a burst of
// writes is still being decoded into it), the one key is read from storage
// instead, as kube-apiserver reads etcd for a GET without a resourceVersion
// and before every update: waiting for the cache would turn its lag into
// 504s on exactly the requests that write. Only a minRV newer than the store
// waits for the cache, and times out with Kubernetes' "Too large resource
// version".
func (s *Server) getCurrent(ctx context.Context, res *registry.Resource, key string, minRV int64) (runtime.Object, error) {
	if minRV >= 0 && s.cfg.Cache.Revision() >= minRV {
		return s.cached(key), nil
	}
	storeRV, err := s.cfg.Store.CurrentRevision(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading current revision: %w", err)
	}
	if minRV < 0 {
		minRV = storeRV
	}
	switch {
	case s.cfg.Cache.Revision() >= minRV:
		return s.cached(key), nil
	case minRV > storeRV:
		if err := s.waitFresh(ctx, minRV); err != nil {
			return nil, err
		}
		return s.cached(key), nil
	}
	return s.getStored(ctx, res, key)
}

// waitFresh makes the cache at least as new as rv; rv < 0 means "as new as
// the store" (a consistent read).
func (s *Server) waitFresh(ctx context.Context, rv int64) error {
	if rv < 0 {
		cur, err := s.cfg.Store.CurrentRevision(ctx)
		if err != nil {
			return fmt.Errorf("reading current revision: %w", err)
		}
		rv = cur
	}
	if s.cfg.Cache.Revision() >= rv {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, freshnessWait)
	defer cancel()
	if err := s.cfg.Cache.WaitForRevision(ctx, rv); err != nil {
		return tooLargeResourceVersion(rv, s.cfg.Cache.Revision())
	}
	return nil
}

// cached returns the cache's object at key, or nil.
func (s *Server) cached(key string) runtime.Object {
	obj, ok := s.cfg.Cache.Get(key)
	if !ok {
		return nil
	}
	return obj
}

// getStored reads key's newest value from storage. The cache's object is
// reused when it is that same version (the cache lagged on other keys), so
// only a key written since costs a decode.
func (s *Server) getStored(ctx context.Context, res *registry.Resource, key string) (runtime.Object, error) {
	s.cfg.Metrics.StorageReads.WithLabelValues("get", res.GroupVersion.Group, res.Resource).Inc()
	kv, err := s.cfg.Store.Get(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, storeError(res, key[strings.LastIndexByte(key, '/')+1:], key, err)
	}
	if obj := s.cached(key); obj != nil {
		if acc, err := meta.Accessor(obj); err == nil && acc.GetResourceVersion() == strconv.FormatInt(kv.ModRevision, 10) {
			return obj, nil
		}
	}
	return s.DecodeStored(res, kv.Value, kv.ModRevision)
}

// storeError turns a storage error from reading or writing key into the
// Status a client gets.
func storeError(res *registry.Resource, name, key string, err error) error {
	switch {
	case errors.Is(err, storage.ErrConflict):
		return conflict(res, name)
	case errors.Is(err, storage.ErrNotFound):
		return apierrors.NewNotFound(res.GroupResource(), name)
	case errors.Is(err, storage.ErrKeyExists):
		return apierrors.NewAlreadyExists(res.GroupResource(), name)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, storage.ErrUnavailable):
		// The client gave up, its timeout passed, or the store did not
		// answer: 504 or 503, never a server fault (unavailable.go).
		return storeUnavailable(err)
	case errors.Is(err, storage.ErrInsufficientStorage):
		// The disk is full: the write was not made, and retrying at once
		// will not help. apimachinery has no constructor (kube-apiserver
		// has no such case); the reason names the HTTP status.
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusInsufficientStorage,
			Reason: reasonInsufficientStorage, Message: err.Error(),
		}}
	}
	return fmt.Errorf("storage %s: %w", key, err)
}

// reasonInsufficientStorage is the Status reason of a 507.
const reasonInsufficientStorage metav1.StatusReason = "InsufficientStorage"

// objectMeta returns the ObjectMeta embedded in a typed object.
func objectMeta(obj runtime.Object) (*metav1.ObjectMeta, error) {
	a, ok := obj.(metav1.ObjectMetaAccessor)
	if !ok {
		return nil, fmt.Errorf("%T has no ObjectMeta", obj)
	}
	om, ok := a.GetObjectMeta().(*metav1.ObjectMeta)
	if !ok {
		return nil, fmt.Errorf("%T has unexpected metadata type", obj)
	}
	return om, nil
}
