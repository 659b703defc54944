package namespaces

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/leasehold/leasehold/internal/registry"
)

// Retry delays of a namespace whose content is not gone yet (objects held by
// finalizers) or whose deletion failed: kube-controller-manager's range.
const (
	retryBaseDelay = 5 * time.Millisecond
	retryMaxDelay  = 60 * time.Second
	// workers is how many namespaces are emptied at once (--concurrent-namespace-syncs).
	workers = 2
)

// Controller empties terminating namespaces. Build it with New.
type Controller struct {
	client  kubernetes.Interface
	content content
	// resources are the namespaced resources to empty, one per storage
	// prefix (a resource served in two versions is deleted once).
	resources []*registry.Resource
	log       *slog.Logger
	now       func() time.Time
	// resync is how often every namespace is looked at again (0: never).
	resync time.Duration
}

// New returns a namespace controller that deletes the content of every
// namespaced resource of resources through client. now stamps conditions
// (time.Now if nil).
func New(client kubernetes.Interface, resources *registry.Set, log *slog.Logger, now func() time.Time) *Controller {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.Default()
	}
	return &Controller{
		client:    client,
		content:   restContent{rest: client.CoreV1().RESTClient()},
		resources: namespaced(resources),
		log:       log.With("controller", "namespace"),
		now:       now,
		resync:    5 * time.Minute,
	}
}

// namespaced returns the namespaced stored resources, one per storage
// prefix, in registration order.
func namespaced(set *registry.Set) []*registry.Resource {
	var out []*registry.Resource
	seen := map[string]bool{}
	for _, r := range set.All() {
		if !r.Namespaced || r.Review != nil || seen[r.KeyPrefix("")] {
			continue
		}
		seen[r.KeyPrefix("")] = true
		out = append(out, r)
	}
	return out
}

// Name implements controller.Runner.
func (c *Controller) Name() string { return "namespace" }

// Run watches namespaces through the client and empties each terminating
// one until ctx ends; it returns once its goroutines have stopped.
func (c *Controller) Run(ctx context.Context) error {
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](retryBaseDelay, retryMaxDelay),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "namespace"})
	factory := informers.NewSharedInformerFactory(c.client, c.resync)
	informer := factory.Core().V1().Namespaces().Informer()
	enqueue := func(obj any) {
		if ns, ok := obj.(*corev1.Namespace); ok && ns.DeletionTimestamp != nil {
			queue.Add(ns.Name)
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return fmt.Errorf("watching namespaces: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil // ctx ended first
	}
	for range workers {
		wg.Go(func() {
			for c.work(ctx, queue) {
			}
		})
	}
	<-ctx.Done()
	return nil
}

// work handles one queued namespace; false once the queue is shut down.
func (c *Controller) work(ctx context.Context, queue workqueue.TypedRateLimitingInterface[string]) bool {
	name, shutdown := queue.Get()
	if shutdown {
		return false
	}
	defer queue.Done(name)
	err := c.sync(ctx, name)
	var remaining *contentRemainingError
	switch {
	case err == nil:
		queue.Forget(name)
	case ctx.Err() != nil:
	case errors.As(err, &remaining):
		c.log.Debug("namespace content remains; retrying", "namespace", name, "remaining", remaining.Error())
		queue.AddRateLimited(name)
	default:
		c.log.Error("deleting namespace content failed; retrying", "namespace", name, "err", err)
		queue.AddRateLimited(name)
	}
	return true
}

// contentRemainingError: the namespace still has objects (held by their
// finalizers, or created meanwhile); it is looked at again later.
type contentRemainingError struct{ summary string }

func (e *contentRemainingError) Error() string { return e.summary }

// sync moves one namespace on: nothing unless it is terminating and still
// carries the kubernetes finalizer (or no finalizer at all, as namespaces
// created before finalizers were set do); otherwise delete its content,
// record the outcome in its conditions, and finalize it once it is empty.
func (c *Controller) sync(ctx context.Context, name string) error {
	ns, err := c.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading namespace %s: %w", name, err)
	}
	if ns.DeletionTimestamp == nil {
		return nil
	}
	ours, others := hasFinalizer(ns, corev1.FinalizerKubernetes), len(ns.Spec.Finalizers) > 0
	if !ours && others {
		return nil // someone else's turn
	}

	r := c.deleteContent(ctx, ns.Name)
	if err := c.writeConditions(ctx, ns, r); err != nil {
		return err
	}
	if r.err() != nil {
		return r.err()
	}
	if !r.empty() {
		return &contentRemainingError{summary: r.remainingSummary()}
	}
	if !ours {
		// No finalizer at all: the second DELETE removes it.
		err := c.client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &ns.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting emptied namespace %s: %w", ns.Name, err)
		}
		return nil
	}
	return c.finalize(ctx, ns.Name)
}

// finalize removes the kubernetes finalizer through namespaces/<name>/finalize,
// re-reading the namespace on a conflict; the API deletes the namespace when
// this leaves it with no finalizers.
func (c *Controller) finalize(ctx context.Context, name string) error {
	for attempt := 0; ; attempt++ {
		ns, err := c.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading namespace %s to finalize it: %w", name, err)
		}
		if !hasFinalizer(ns, corev1.FinalizerKubernetes) {
			return nil
		}
		ns = ns.DeepCopy()
		kept := ns.Spec.Finalizers[:0]
		for _, f := range ns.Spec.Finalizers {
			if f != corev1.FinalizerKubernetes {
				kept = append(kept, f)
			}
		}
		ns.Spec.Finalizers = kept
		_, err = c.client.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
		switch {
		case err == nil, apierrors.IsNotFound(err):
			c.log.Info("namespace emptied and finalized", "namespace", name)
			return nil
		case apierrors.IsConflict(err) && attempt < 3:
			continue
		}
		return fmt.Errorf("finalizing namespace %s: %w", name, err)
	}
}

func hasFinalizer(ns *corev1.Namespace, f corev1.FinalizerName) bool {
	for _, x := range ns.Spec.Finalizers {
		if x == f {
			return true
		}
	}
	return false
}
