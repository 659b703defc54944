package dashboard

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// The resources the dashboard reads, as named on the page.
const (
	resLeases = "leases"
	resNodes  = "nodes"
	resEvents = "events"
)

// sources are the lease source and the informers feeding a Fleet, and what
// each could read.
type sources struct {
	informers map[string]cache.SharedIndexInformer
	leases    *leaseSource
	fleet     *Fleet
	// stop waits for the informers' goroutines after their context ended.
	stop func()

	mu     sync.Mutex
	errors map[string]error // the latest list/watch error per resource
}

// startSources starts the lease source (leasewatch.go) and informers on
// nodes (all namespaces) and on LeaderElection events; they stop when ctx
// ends. Objects are shrunk to what the Fleet reads before the informer
// caches them.
func startSources(ctx context.Context, cs kubernetes.Interface, fleet *Fleet) (*sources, error) {
	s := &sources{fleet: fleet, errors: map[string]error{}}
	s.leases = &leaseSource{client: cs.CoordinationV1().RESTClient(), fleet: fleet,
		report: func(err error) { s.recordError(resLeases)(ctx, nil, err) }}
	events := cs.CoreV1().Events("")
	onlyLeaderEvents := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("reason", leaderEvent).String()
	}
	s.informers = map[string]cache.SharedIndexInformer{
		resNodes: newInformer(&corev1.Node{}, &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return pagedList(ctx, o, cs.CoreV1().Nodes().List)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return cs.CoreV1().Nodes().Watch(ctx, o)
			},
		}),
		resEvents: newInformer(&corev1.Event{}, &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				onlyLeaderEvents(&o)
				return events.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				onlyLeaderEvents(&o)
				return events.Watch(ctx, o)
			},
		}),
	}
	handlers := map[string]cache.ResourceEventHandlerFuncs{
		resNodes: {
			AddFunc:    func(o any) { fleet.SetNode(o.(*corev1.Node)) },
			UpdateFunc: func(_, o any) { fleet.SetNode(o.(*corev1.Node)) },
			DeleteFunc: func(o any) {
				if m, ok := meta(o); ok {
					fleet.DeleteNode(m.GetName())
				}
			},
		},
		resEvents: {
			AddFunc:    func(o any) { fleet.SetEvent(o.(*corev1.Event)) },
			UpdateFunc: func(_, o any) { fleet.SetEvent(o.(*corev1.Event)) },
		},
	}
	for name, inf := range s.informers {
		if err := inf.SetTransform(shrink); err != nil {
			return nil, fmt.Errorf("%s informer transform: %w", name, err)
		}
		if err := inf.SetWatchErrorHandlerWithContext(s.recordError(name)); err != nil {
			return nil, fmt.Errorf("%s informer error handler: %w", name, err)
		}
		if _, err := inf.AddEventHandler(handlers[name]); err != nil {
			return nil, fmt.Errorf("%s informer handler: %w", name, err)
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { s.leases.run(ctx) })
	for _, inf := range s.informers {
		wg.Go(func() { inf.RunWithContext(ctx) })
	}
	s.stop = wg.Wait
	return s, nil
}

// recordError keeps a resource's latest list/watch error for the page; it
// replaces client-go's default handler, which logs every retry.
func (s *sources) recordError(name string) func(context.Context, *cache.Reflector, error) {
	return func(_ context.Context, _ *cache.Reflector, err error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.errors[name] = err
	}
}

// access reports, per resource, "ok" once listed, "forbidden: ..." when the
// user may not list or watch it, another error's text, or "syncing"; and
// tells the Fleet whether Nodes are known.
func (s *sources) access() map[string]string {
	out := map[string]string{}
	s.mu.Lock()
	defer s.mu.Unlock()
	synced := map[string]func() bool{resLeases: s.leases.hasSynced}
	for name, inf := range s.informers {
		synced[name] = inf.HasSynced
	}
	for name, hasSynced := range synced {
		err := s.errors[name]
		switch {
		case hasSynced():
			out[name] = "ok"
		case apierrors.IsForbidden(err):
			out[name] = "forbidden: " + err.Error()
		case err != nil:
			out[name] = "error: " + err.Error()
		default:
			out[name] = "syncing"
		}
	}
	s.fleet.NodesKnown(s.informers[resNodes].HasSynced())
	return out
}

// plainList is a ListWatch that makes the reflector list and then watch,
// rather than stream its initial list through a watch (client-go's
// WatchListClient): the streaming form retries an unreachable server
// inside client-go, without telling the watch error handler, so the page
// could not say why nothing arrives, and its back-off ignores
// cancellation, which held a stopping dashboard for up to half a minute.
type plainList struct{ *cache.ListWatch }

// IsWatchListSemanticsUnSupported tells the reflector to list plainly.
func (plainList) IsWatchListSemanticsUnSupported() bool { return true }

func newInformer(obj runtime.Object, lw *cache.ListWatch) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformer(plainList{lw}, obj, 0, cache.Indexers{})
}

// meta returns the object metadata of a deleted object, which may come
// wrapped as cache.DeletedFinalStateUnknown.
func meta(o any) (metav1.Object, bool) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	m, ok := o.(metav1.Object)
	return m, ok
}

// shrink drops what the Fleet never reads before the informer caches an
// object: managed fields and annotations everywhere, and a Node's status
// but for its Ready condition (a real Node carries kilobytes of images).
func shrink(o any) (any, error) {
	if m, ok := o.(metav1.Object); ok {
		m.SetManagedFields(nil)
		m.SetAnnotations(nil)
	}
	if n, ok := o.(*corev1.Node); ok {
		var ready []corev1.NodeCondition
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = append(ready, corev1.NodeCondition{Type: c.Type, Status: c.Status})
			}
		}
		n.Status = corev1.NodeStatus{Conditions: ready}
	}
	return o, nil
}
