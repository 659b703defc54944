package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/registry"
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
		return apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", rv, s.cfg.Cache.Revision()), 1)
	}
	return nil
}

// readRV turns a get/list resourceVersion parameter into a waitFresh target:
// unset is a consistent read (-1), "0" any version (0), else not older than it.
func readRV(param string) (int64, error) {
	if param == "" {
		return -1, nil
	}
	return parseRV(param)
}

// getCurrent returns the cached object at key after a consistent wait, or nil.
func (s *Server) getCurrent(ctx context.Context, key string, minRV int64) (runtime.Object, error) {
	if err := s.waitFresh(ctx, minRV); err != nil {
		return nil, err
	}
	obj, ok := s.cfg.Cache.Get(key)
	if !ok {
		return nil, nil
	}
	return obj, nil
}

func (s *Server) get(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	n, ok := s.negotiate(r.Header.Get("Accept"), false)
	if !ok {
		return notAcceptable(s)
	}
	rv, err := readRV(r.URL.Query().Get("resourceVersion"))
	if err != nil {
		return err
	}
	if n, err = withTableOptions(n, r.URL.Query()); err != nil {
		return err
	}
	obj, err := s.getCurrent(r.Context(), res.Key(info.namespace, info.name), rv)
	if err != nil {
		return err
	}
	if obj == nil {
		return apierrors.NewNotFound(res.GroupResource(), info.name)
	}
	out, err := s.transform(res, n, obj, false, false)
	if err != nil {
		return err
	}
	s.writeObject(w, http.StatusOK, n, out)
	return nil
}

func notAcceptable(s *Server) error {
	return statusError(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
		fmt.Sprintf("only the following media types are accepted: %s", s.mediaTypes()))
}
