package objects

// watch.go is where a watch starts: the resourceVersion and
// sendInitialEvents semantics of kube-apiserver's cacher, over the watch
// cache's watchers.

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// ExpiredError is a watch from a revision whose changes the watch cache no
// longer holds. kube-apiserver, having accepted the resourceVersion,
// reports it as the stream's one ERROR event carrying Status (a 410
// Expired), on a 200 response, not as the response's status.
type ExpiredError struct {
	Status metav1.Status
}

func (e *ExpiredError) Error() string { return e.Status.Message }

// Watch starts a watch of res's objects in namespace that o selects: the
// caller reads its events and stops it. Where it starts:
//   - sendInitialEvents=true: every current object (ADDED), from a state at
//     least as new as the resourceVersion ("": the store's), then changes;
//   - sendInitialEvents=false: changes after the resourceVersion ("": the
//     store's revision once the cache has it);
//   - resourceVersion "" or "0": every current object, then changes; ""
//     first waits for the cache to be as new as the store;
//   - any other resourceVersion: changes after it; one the cache has not
//     reached is waited for, then "Too large resource version" (504), and
//     one whose changes it no longer holds is an *ExpiredError.
func (s *Store) Watch(ctx context.Context, res *registry.Resource, namespace string, o ListOptions) (*watchcache.Watcher, error) {
	wo := watchcache.WatchOptions{
		Prefix:    res.KeyPrefix(namespace),
		Predicate: o.Selector.matcher(),
		Bookmarks: o.AllowWatchBookmarks,
	}
	rv, err := ParseResourceVersion(o.ResourceVersion)
	if err != nil {
		return nil, err
	}
	switch {
	case o.SendInitialEvents != nil && *o.SendInitialEvents:
		wo.InitialState = true
		if o.ResourceVersion == "" {
			rv = -1
		}
		if err := s.WaitFresh(ctx, rv); err != nil {
			return nil, err
		}
	case o.SendInitialEvents != nil:
		if o.ResourceVersion == "" {
			rv = -1
		}
		if err := s.WaitFresh(ctx, rv); err != nil {
			return nil, err
		}
		if rv < 0 {
			rv = s.cache.Revision()
		}
		wo.FromRevision = rv
	case o.ResourceVersion == "" || o.ResourceVersion == "0":
		wo.InitialState = true
		if o.ResourceVersion == "" {
			if err := s.WaitFresh(ctx, -1); err != nil {
				return nil, err
			}
		}
	default:
		wo.FromRevision = rv
	}
	w, err := s.cache.Watch(ctx, wo)
	if err == nil {
		return w, nil
	}
	var tooOld *watchcache.TooOldError
	if errors.As(err, &tooOld) {
		st := apierrors.NewResourceExpired(tooOld.Error()).Status()
		st.Kind, st.APIVersion = "Status", "v1"
		return nil, &ExpiredError{Status: st}
	}
	var tooNew *watchcache.TooNewError
	if errors.As(err, &tooNew) {
		return nil, TooLargeResourceVersion(tooNew.Requested, tooNew.Current)
	}
	return nil, fmt.Errorf("starting watch: %w", err)
}
