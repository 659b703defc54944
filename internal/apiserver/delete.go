package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/leasehold/leasehold/internal/admission"
	"github.com/leasehold/leasehold/internal/registry"
)

// parseDeleteOptions reads DeleteOptions from the body (if any) and the query.
func (s *Server) parseDeleteOptions(r *http.Request) (metav1.DeleteOptions, error) {
	var o metav1.DeleteOptions
	body, err := readBody(r)
	if err != nil {
		return o, err
	}
	if len(body) > 0 {
		si, err := s.requestSerializer(r.Header.Get("Content-Type"))
		if err != nil {
			return o, err
		}
		if _, _, err := si.Serializer.Decode(body, nil, &o); err != nil {
			return o, apierrors.NewBadRequest(fmt.Sprintf("decoding DeleteOptions: %v", err))
		}
		logDeleteOptions(r, &o)
	}
	q := r.URL.Query()
	if v := q.Get("propagationPolicy"); v != "" {
		p := metav1.DeletionPropagation(v)
		o.PropagationPolicy = &p
	}
	if v := q.Get("gracePeriodSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return o, apierrors.NewBadRequest(fmt.Sprintf("invalid gracePeriodSeconds %q", v))
		}
		o.GracePeriodSeconds = &n
	}
	o.DryRun = append(o.DryRun, q["dryRun"]...)
	for _, d := range o.DryRun {
		if d != metav1.DryRunAll {
			return o, apierrors.NewBadRequest(fmt.Sprintf("unsupported dryRun value %q: only All is supported", d))
		}
	}
	if p := o.PropagationPolicy; p != nil {
		switch *p {
		case metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan:
		default:
			return o, apierrors.NewInvalid(metav1.SchemeGroupVersion.WithKind("DeleteOptions").GroupKind(), "", field.ErrorList{
				field.NotSupported(field.NewPath("propagationPolicy"), *p, []string{string(metav1.DeletePropagationForeground), string(metav1.DeletePropagationBackground), string(metav1.DeletePropagationOrphan)})})
		}
	}
	return o, nil
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	n, ok := s.negotiate(r.Header.Get("Accept"), false)
	if !ok {
		return s.notAcceptable()
	}
	opts, err := s.parseDeleteOptions(r)
	if err != nil {
		return err
	}
	obj, done, err := s.deleteObject(r.Context(), res, info.namespace, info.name, opts)
	if err != nil {
		return err
	}
	if !done {
		// Finalizers hold the object: answer with its new state.
		out, err := s.transform(res, n, obj, false, false)
		if err != nil {
			return err
		}
		s.writeObject(w, http.StatusOK, n, out)
		return nil
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	st := &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details:  &metav1.StatusDetails{Name: info.name, Group: res.GroupVersion.Group, Kind: res.Resource, UID: acc.GetUID()},
	}
	if n.target != targetObject {
		n, _ = s.negotiate("application/json", false)
	}
	s.writeObject(w, http.StatusOK, n, st)
	return nil
}

// maxDeleteRetries bounds how often a delete reads the object again after a
// write got in between; kube-apiserver's has no bound but the request's
// deadline. Each retry reads the store, so only writers that win every
// race can exhaust it.
const maxDeleteRetries = 100

// deleteObject deletes one object. done=false means finalizers keep it, and
// obj is its updated state with deletionTimestamp set.
func (s *Server) deleteObject(ctx context.Context, res *registry.Resource, namespace, name string, opts metav1.DeleteOptions) (runtime.Object, bool, error) {
	key := res.Key(namespace, name)
	dryRun := len(opts.DryRun) > 0
	for attempt := 0; ; attempt++ {
		cur, err := s.getCurrent(ctx, res, key, -1)
		if err != nil {
			return nil, false, err
		}
		if cur == nil {
			return nil, false, apierrors.NewNotFound(res.GroupResource(), name)
		}
		acc, err := meta.Accessor(cur)
		if err != nil {
			return nil, false, err
		}
		if p := opts.Preconditions; p != nil {
			if p.UID != nil && *p.UID != acc.GetUID() {
				//lint:ignore ST1005 the wire-visible Kubernetes message starts with a capital
				return nil, false, apierrors.NewConflict(res.GroupResource(), name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, acc.GetUID()))
			}
			if p.ResourceVersion != nil && *p.ResourceVersion != acc.GetResourceVersion() {
				//lint:ignore ST1005 the wire-visible Kubernetes message starts with a capital
				return nil, false, apierrors.NewConflict(res.GroupResource(), name, fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, acc.GetResourceVersion()))
			}
		}
		if err := s.admit(ctx, admission.Delete, namespace, name, nil, cur, dryRun); err != nil {
			return nil, false, err
		}
		rev, _ := parseRV(acc.GetResourceVersion())
		finalizers := deletionFinalizers(acc.GetFinalizers(), opts.PropagationPolicy)
		if res.PrepareForDelete != nil {
			// The kind may keep the object while it is emptied (a
			// namespace goes Terminating), even with no finalizers.
			obj := cur.DeepCopyObject()
			keep, err := res.PrepareForDelete(obj)
			if err != nil {
				return nil, false, err
			}
			if keep {
				out, err := s.markDeleting(ctx, res, key, obj, finalizers, dryRun)
				if apierrors.IsConflict(err) && attempt < maxPatchRetries {
					continue
				}
				return out, false, err
			}
		}
		if len(finalizers) > 0 {
			obj, err := s.markDeleting(ctx, res, key, cur, finalizers, dryRun)
			if apierrors.IsConflict(err) && attempt < maxPatchRetries {
				continue
			}
			return obj, false, err
		}
		if dryRun {
			return cur, true, nil
		}
		// cur is the watch cache's shared object; finishDelete stamps the
		// deletion's resourceVersion on what it is given.
		obj, err := s.finishDelete(ctx, res, key, rev, cur.DeepCopyObject())
		// A write got in between: read again, and check the preconditions
		// on what is there now (kube-apiserver's conditional delete does
		// the same, for as long as it takes), so a uid precondition that
		// still holds succeeds however busy the object's writers are.
		if apierrors.IsConflict(err) && attempt < maxDeleteRetries && ctx.Err() == nil {
			continue
		}
		return obj, err == nil, err
	}
}

// deletionFinalizers returns the finalizers the object must carry while it
// is being deleted with the given propagation policy.
func deletionFinalizers(existing []string, policy *metav1.DeletionPropagation) []string {
	out := append([]string(nil), existing...)
	has := func(f string) bool {
		for _, x := range out {
			if x == f {
				return true
			}
		}
		return false
	}
	if policy != nil {
		var add, drop string
		switch *policy {
		case metav1.DeletePropagationOrphan:
			add, drop = metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents
		case metav1.DeletePropagationForeground:
			add, drop = metav1.FinalizerDeleteDependents, metav1.FinalizerOrphanDependents
		}
		if add != "" {
			kept := out[:0]
			for _, f := range out {
				if f != drop {
					kept = append(kept, f)
				}
			}
			out = kept
			if !has(add) {
				out = append(out, add)
			}
		}
	}
	return out
}

// markDeleting sets deletionTimestamp and the finalizers (possibly none:
// the kind's PrepareForDelete keeps the object) on cur.
func (s *Server) markDeleting(ctx context.Context, res *registry.Resource, key string, cur runtime.Object, finalizers []string, dryRun bool) (runtime.Object, error) {
	obj := cur.DeepCopyObject()
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if acc.GetDeletionTimestamp() == nil {
		now := metav1.NewTime(s.now().Truncate(1e9))
		acc.SetDeletionTimestamp(&now)
		zero := int64(0)
		acc.SetDeletionGracePeriodSeconds(&zero)
	}
	acc.SetFinalizers(finalizers)
	expected, err := parseRV(acc.GetResourceVersion())
	if err != nil {
		return nil, err
	}
	if dryRun {
		return obj, nil
	}
	acc.SetResourceVersion("")
	value, err := s.encodeForStorage(obj)
	if err != nil {
		return nil, err
	}
	rev, err := s.cfg.Store.Update(ctx, key, expected, value)
	if err != nil {
		return nil, storeError(res, acc.GetName(), key, err)
	}
	acc.SetResourceVersion(strconv.FormatInt(rev, 10))
	return obj, nil
}

// finishDelete removes the object from storage if it is still at revision rev.
func (s *Server) finishDelete(ctx context.Context, res *registry.Resource, key string, rev int64, obj runtime.Object) (runtime.Object, error) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	_, delRev, err := s.cfg.Store.Delete(ctx, key, rev)
	if err != nil {
		return nil, storeError(res, acc.GetName(), key, err)
	}
	acc.SetResourceVersion(strconv.FormatInt(delRev, 10))
	return obj, nil
}

func (s *Server) deleteCollection(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	n, ok := s.negotiate(r.Header.Get("Accept"), true)
	if !ok {
		return s.notAcceptable()
	}
	o, err := s.parseListOptions(res, r.URL.Query(), false)
	if err != nil {
		return err
	}
	opts, err := s.parseDeleteOptions(r)
	if err != nil {
		return err
	}
	if err := s.waitFresh(r.Context(), -1); err != nil {
		return err
	}
	items, rev := s.cfg.Cache.List(res.KeyPrefix(info.namespace), o.pred.matcher(res))
	var deleted []runtime.Object
	for _, item := range items {
		acc, err := meta.Accessor(item)
		if err != nil {
			return err
		}
		obj, _, err := s.deleteObject(r.Context(), res, acc.GetNamespace(), acc.GetName(), opts)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		deleted = append(deleted, obj)
		if delRV, _ := parseRV(mustRV(obj)); delRV > rev {
			rev = delRV
		}
	}
	list, err := s.buildList(res, deleted, rev, "")
	if err != nil {
		return err
	}
	return s.respondList(w, res, n, list)
}

func mustRV(obj runtime.Object) string {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return acc.GetResourceVersion()
}
