package objects

// list.go is what a list means: which resourceVersion it is read at, from
// the watch cache or from storage, one page at a time with a continue
// token, and the typed list it makes.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// listBudgetWait bounds how long a list waits for the watch cache's list
// budget (the objects all pages in flight may hold) before it is a 429.
const listBudgetWait = 3 * time.Second

// List returns the typed list (e.g. *LeaseList) of res's objects in
// namespace that o asks for, and the function to call once it is written:
// a page from the watch cache holds its objects against the cache's list
// budget until then.
//
// Which state it reads, as kube-apiserver's cacher decides: a continue
// token, or an exact resourceVersion (resourceVersionMatch=Exact, or a
// resourceVersion with a limit), is a page of storage at that revision;
// anything else is the watch cache once it is as new as the
// resourceVersion asks ("": the store's revision, a consistent list; "0":
// any). A consistent list the cache cannot catch up with in time is read
// from storage.
func (s *Store) List(ctx context.Context, res *registry.Resource, namespace string, o ListOptions) (runtime.Object, func(), error) {
	prefix := res.KeyPrefix(namespace)
	match := o.Selector.matcher()
	exact := o.ResourceVersionMatch == metav1.ResourceVersionMatchExact ||
		(o.ResourceVersionMatch == "" && o.ResourceVersion != "" && o.ResourceVersion != "0" && o.Limit > 0)
	var (
		rv    int64
		start string
		err   error
	)
	switch {
	case o.Continue != "":
		if rv, start, err = decodeContinue(o.Continue, prefix); err != nil {
			return nil, noRelease, err
		}
	case exact:
		if rv, err = ParseResourceVersion(o.ResourceVersion); err != nil {
			return nil, noRelease, err
		}
	default:
		minRV, err := ReadResourceVersion(o.ResourceVersion)
		if err != nil {
			return nil, noRelease, err
		}
		if err := s.WaitFresh(ctx, minRV); err != nil {
			if minRV >= 0 || !apierrors.IsTimeout(err) {
				return nil, noRelease, err
			}
			// A consistent list the cache could not catch up with in time
			// is read from storage, as kube-apiserver then lists etcd.
			if s.storageReads != nil {
				s.storageReads.WithLabelValues("list", res.GroupVersion.Group, res.Resource).Inc()
			}
			break
		}
		return s.listCached(ctx, res, prefix, o, match)
	}
	items, rev, next, err := s.listStored(ctx, res, prefix, rv, start, o.Limit, match)
	if err != nil {
		return nil, noRelease, err
	}
	list, err := newList(res, items, rev, continueFrom(rev, next, prefix))
	return list, noRelease, err
}

func noRelease() {}

// continueFrom is the continue token of a page that ends before next ("":
// the last page).
func continueFrom(rev int64, next, prefix string) string {
	if next == "" {
		return ""
	}
	return encodeContinue(rev, next, prefix)
}

// listCached is a page of the watch cache of the objects match selects
// (o.Selector's), which the caller releases.
func (s *Store) listCached(ctx context.Context, res *registry.Resource, prefix string, o ListOptions, match func(runtime.Object) bool) (runtime.Object, func(), error) {
	page, err := s.cachePage(ctx, watchcache.PageRequest{Prefix: prefix, Limit: int(o.Limit), Predicate: match})
	if err != nil {
		return nil, noRelease, err
	}
	list, err := newList(res, page.Objects, page.Revision, continueFrom(page.Revision, page.Next, prefix))
	if err != nil {
		page.Release()
		return nil, noRelease, err
	}
	if o.Selector.Empty() && page.Remaining >= 0 {
		if lm, lerr := meta.ListAccessor(list); lerr == nil {
			lm.SetRemainingItemCount(&page.Remaining)
		}
	}
	return list, page.Release, nil
}

// cachePage takes one page from the watch cache, waiting at most
// listBudgetWait for its share of the list budget (a 429 after that).
func (s *Store) cachePage(ctx context.Context, req watchcache.PageRequest) (*watchcache.Page, error) {
	wait, cancel := context.WithTimeout(ctx, listBudgetWait)
	defer cancel()
	page, err := s.cache.ListPage(wait, req)
	switch {
	case err == nil:
		return page, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case wait.Err() != nil:
		// The answer of kube-apiserver's (and apiserver's) request limits.
		return nil, apierrors.NewTooManyRequests("Too many requests, please try again later.", 1)
	}
	return nil, fmt.Errorf("listing %s: %w", req.Prefix, err)
}

// listStored reads a page at revision rv (0: the newest) from storage,
// starting at key start, filtering as it goes, and returns the key to
// continue from ("" at the end).
func (s *Store) listStored(ctx context.Context, res *registry.Resource, prefix string, rv int64, start string, limit int64, match func(runtime.Object) bool) ([]runtime.Object, int64, string, error) {
	var items []runtime.Object
	for {
		page := limit
		if page <= 0 || page > 500 {
			page = 500
		}
		lr, err := s.storage.List(ctx, prefix, storage.ListOptions{Revision: rv, StartKey: start, Limit: int(page)})
		if err != nil {
			switch {
			case errors.Is(err, storage.ErrCompacted) && start == "":
				// An exact-revision list (resourceVersionMatch=Exact, or a
				// limit without continue), as kube's etcd3 store words it.
				return nil, 0, "", apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
			case errors.Is(err, storage.ErrCompacted):
				return nil, 0, "", apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.")
			case errors.Is(err, storage.ErrFutureRevision):
				return nil, 0, "", TooLargeResourceVersion(rv, s.cache.Revision())
			}
			return nil, 0, "", fmt.Errorf("listing %s: %w", prefix, err)
		}
		rv = lr.Revision
		for i, kv := range lr.KVs {
			obj, err := s.form.Decode(res, kv.Value, kv.ModRevision)
			if err != nil {
				return nil, 0, "", err
			}
			if match == nil || match(obj) {
				items = append(items, obj)
			}
			if limit > 0 && int64(len(items)) == limit {
				if i < len(lr.KVs)-1 || lr.More {
					return items, rv, kv.Key + "\x00", nil
				}
				return items, rv, "", nil
			}
		}
		if !lr.More || len(lr.KVs) == 0 {
			return items, rv, "", nil
		}
		start = lr.KVs[len(lr.KVs)-1].Key + "\x00"
	}
}

// newList assembles res's typed list of items at revision rev, with the
// continue token cont.
func newList(res *registry.Resource, items []runtime.Object, rev int64, cont string) (runtime.Object, error) {
	list := res.NewList()
	list.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{Group: res.GroupVersion.Group, Version: res.GroupVersion.Version, Kind: res.ListKind})
	if err := meta.SetList(list, items); err != nil {
		return nil, fmt.Errorf("building %s: %w", res.ListKind, err)
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	lm.SetResourceVersion(strconv.FormatInt(rev, 10))
	lm.SetContinue(cont)
	return list, nil
}
