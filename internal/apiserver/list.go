package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/leasehold/leasehold/internal/objects"
	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// listOptions are the parsed query parameters of list and watch.
type listOptions struct {
	metav1.ListOptions
	pred predicate
}

func (s *Server) parseListOptions(res *registry.Resource, q url.Values, watch bool) (listOptions, error) {
	var o listOptions
	if err := metav1.Convert_url_Values_To_v1_ListOptions(&q, &o.ListOptions, nil); err != nil {
		return o, apierrors.NewBadRequest(err.Error())
	}
	if v := q.Get("labelSelector"); v != "" || q.Get("fieldSelector") != "" {
		p, err := parsePredicate(res, v, q.Get("fieldSelector"))
		if err != nil {
			return o, err
		}
		o.pred = p
	} else {
		o.pred, _ = parsePredicate(res, "", "")
	}
	if errs := validateListOptions(&o.ListOptions, watch); len(errs) > 0 {
		return o, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	return o, nil
}

// validateListOptions applies apiserver's ListOptions rules.
func validateListOptions(o *metav1.ListOptions, watch bool) field.ErrorList {
	var errs field.ErrorList
	rvm := field.NewPath("resourceVersionMatch")
	if o.SendInitialEvents != nil {
		if !watch {
			errs = append(errs, field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for list"))
		} else {
			if o.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan {
				errs = append(errs, field.Forbidden(rvm, "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
			}
			if !o.AllowWatchBookmarks {
				errs = append(errs, field.Forbidden(field.NewPath("allowWatchBookmarks"), "allowWatchBookmarks must be set to true when sendInitialEvents is specified"))
			}
			if o.Continue != "" {
				errs = append(errs, field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden when continue is provided"))
			}
		}
		return errs
	}
	if o.ResourceVersionMatch == "" {
		return nil
	}
	if watch {
		return append(errs, field.Forbidden(rvm, "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
	}
	if o.ResourceVersion == "" {
		errs = append(errs, field.Forbidden(rvm, "resourceVersionMatch is forbidden unless resourceVersion is provided"))
	}
	if o.Continue != "" {
		errs = append(errs, field.Forbidden(rvm, "resourceVersionMatch is forbidden when continue is provided"))
	}
	switch o.ResourceVersionMatch {
	case metav1.ResourceVersionMatchNotOlderThan:
	case metav1.ResourceVersionMatchExact:
		if o.ResourceVersion == "0" {
			errs = append(errs, field.Forbidden(rvm, `resourceVersionMatch "exact" is forbidden for resourceVersion "0"`))
		}
	default:
		errs = append(errs, field.NotSupported(rvm, o.ResourceVersionMatch, []string{string(metav1.ResourceVersionMatchExact), string(metav1.ResourceVersionMatchNotOlderThan)}))
	}
	return errs
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	n, err := s.accept(r, true)
	if err != nil {
		return err
	}
	o, err := s.parseListOptions(res, r.URL.Query(), false)
	if err != nil {
		return err
	}
	if n, err = withTableOptions(n, r.URL.Query()); err != nil {
		return err
	}
	list, release, err := s.doList(r.Context(), res, info.namespace, o)
	if err != nil {
		return err
	}
	// The page's objects count against the cache's list budget until the
	// response is written.
	defer release()
	return s.respondList(w, res, n, list)
}

// listBudgetWait bounds how long a list waits for the watch cache's list
// budget (the objects all pages in flight may hold) before it is a 429.
const listBudgetWait = 3 * time.Second

// doList returns the typed list (e.g. *LeaseList) the options ask for, and
// the function to call once it is written (it gives back the list budget).
func (s *Server) doList(ctx context.Context, res *registry.Resource, namespace string, o listOptions) (runtime.Object, func(), error) {
	list, page, err := s.listObjects(ctx, res, namespace, o)
	if page == nil {
		return list, noRelease, err
	}
	if err != nil {
		page.Release()
		return nil, noRelease, err
	}
	return list, page.Release, nil
}

// listObjects is doList; a page from the watch cache comes back to be
// released.
func (s *Server) listObjects(ctx context.Context, res *registry.Resource, namespace string, o listOptions) (runtime.Object, *watchcache.Page, error) {
	prefix := res.KeyPrefix(namespace)
	match := o.pred.matcher(res)
	var (
		items []runtime.Object
		rev   int64
		next  string
		err   error
	)
	exact := o.ResourceVersionMatch == metav1.ResourceVersionMatchExact ||
		(o.ResourceVersionMatch == "" && o.ResourceVersion != "" && o.ResourceVersion != "0" && o.Limit > 0)
	switch {
	case o.Continue != "":
		var rv int64
		var start string
		rv, start, err = decodeContinue(o.Continue, prefix)
		if err != nil {
			return nil, nil, err
		}
		items, rev, next, err = s.listFromStorage(ctx, res, prefix, rv, start, o.Limit, match)
		if err != nil {
			return nil, nil, err
		}
	case exact:
		rv, err := objects.ParseResourceVersion(o.ResourceVersion)
		if err != nil {
			return nil, nil, err
		}
		items, rev, next, err = s.listFromStorage(ctx, res, prefix, rv, "", o.Limit, match)
		if err != nil {
			return nil, nil, err
		}
	default:
		minRV, err := objects.ReadResourceVersion(o.ResourceVersion)
		if err != nil {
			return nil, nil, err
		}
		if err := s.objects.WaitFresh(ctx, minRV); err != nil {
			if minRV >= 0 || !apierrors.IsTimeout(err) {
				return nil, nil, err
			}
			// A consistent list the cache could not catch up with in time
			// is read from storage, as kube-apiserver then lists etcd.
			s.cfg.Metrics.StorageReads.WithLabelValues("list", res.GroupVersion.Group, res.Resource).Inc()
			items, rev, next, err = s.listFromStorage(ctx, res, prefix, 0, "", o.Limit, match)
			if err != nil {
				return nil, nil, err
			}
			break
		}
		page, err := s.cachePage(ctx, watchcache.PageRequest{Prefix: prefix, Limit: int(o.Limit), Predicate: match})
		if err != nil {
			return nil, nil, err
		}
		cont := ""
		if page.Next != "" {
			cont = encodeContinue(page.Revision, page.Next, prefix)
		}
		list, err := s.buildList(res, page.Objects, page.Revision, cont)
		if err == nil && o.pred.empty() && page.Remaining >= 0 {
			if lm, lerr := meta.ListAccessor(list); lerr == nil {
				lm.SetRemainingItemCount(&page.Remaining)
			}
		}
		return list, page, err
	}
	cont := ""
	if next != "" {
		cont = encodeContinue(rev, next, prefix)
	}
	list, err := s.buildList(res, items, rev, cont)
	return list, nil, err
}

// cachePage takes one page from the watch cache, waiting at most
// listBudgetWait for its share of the list budget (a 429 after that).
func (s *Server) cachePage(ctx context.Context, req watchcache.PageRequest) (*watchcache.Page, error) {
	wait, cancel := context.WithTimeout(ctx, listBudgetWait)
	defer cancel()
	page, err := s.cfg.Cache.ListPage(wait, req)
	switch {
	case err == nil:
		return page, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case wait.Err() != nil:
		return nil, tooManyRequests()
	}
	return nil, fmt.Errorf("listing %s: %w", req.Prefix, err)
}

// listFromStorage reads a page at an exact revision from storage, filtering
// as it goes, and returns the key to continue from ("" at the end).
func (s *Server) listFromStorage(ctx context.Context, res *registry.Resource, prefix string, rv int64, start string, limit int64, match func(runtime.Object) bool) ([]runtime.Object, int64, string, error) {
	var items []runtime.Object
	for {
		page := limit
		if page <= 0 || page > 500 {
			page = 500
		}
		lr, err := s.cfg.Store.List(ctx, prefix, storage.ListOptions{Revision: rv, StartKey: start, Limit: int(page)})
		if err != nil {
			switch {
			case errors.Is(err, storage.ErrCompacted) && start == "":
				// An exact-revision list (resourceVersionMatch=Exact, or a
				// limit without continue), as kube's etcd3 store words it.
				return nil, 0, "", apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
			case errors.Is(err, storage.ErrCompacted):
				return nil, 0, "", apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.")
			case errors.Is(err, storage.ErrFutureRevision):
				return nil, 0, "", objects.TooLargeResourceVersion(rv, s.cfg.Cache.Revision())
			}
			return nil, 0, "", fmt.Errorf("listing %s: %w", prefix, err)
		}
		rv = lr.Revision
		for i, kv := range lr.KVs {
			obj, err := s.decodeKV(res, kv.Value, kv.ModRevision)
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

func (s *Server) decodeKV(res *registry.Resource, value []byte, rev int64) (runtime.Object, error) {
	return s.form.Decode(res, value, rev)
}

// buildList assembles a typed list of items at revision rev.
func (s *Server) buildList(res *registry.Resource, items []runtime.Object, rev int64, cont string) (runtime.Object, error) {
	list := res.NewList()
	setListGVK(res, list)
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
