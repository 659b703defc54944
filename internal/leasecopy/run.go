package leasecopy

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Config says what to copy where.
type Config struct {
	// Source is read with list and watch (an informer).
	Source kubernetes.Interface
	// Namespace limits the copy to one namespace; empty is all.
	Namespace string
	// Target receives the copies.
	Target Target
	// Follow keeps mirroring after the first pass until ctx ends; without
	// it Run returns once every lease of the first pass is copied.
	Follow bool
	// Workers is how many leases are copied at once (default 8).
	Workers int
	// Out receives progress lines, Errs one line per lease given up on.
	Out, Errs io.Writer
}

// opTimeout bounds one lease's read-compare-write on the target, so that a
// target that stops answering shows as errors instead of a silent stall.
const opTimeout = 15 * time.Second

// maxRetries is how often a failing lease is retried (with exponential
// backoff from 5 ms) before a one-pass copy gives up on it, and a mirror
// reports it (and keeps retrying, at least every maxBackoff).
const maxRetries = 5

// maxBackoff caps the wait between a mirror's retries of one lease: a
// target back from a restart gets every lease within seconds.
const maxBackoff = 5 * time.Second

// Run copies as cfg says and returns the counts (nil when it could not
// start: the source did not answer). It ends when the first
// pass is done (without Follow) or when ctx ends (with Follow; a SIGTERM
// is the normal end of a mirror, not an error). The error is non-nil when
// the source could not be read at all or when any lease could not be
// copied.
func Run(ctx context.Context, cfg Config) (*Stats, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	leases := cfg.Source.CoordinationV1().Leases(cfg.Namespace)
	// The informer retries a failing list forever; one list first fails
	// fast on a wrong kubeconfig, missing permissions or a server that
	// does not serve leases, with the server's own words.
	if _, err := leases.List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return nil, kubectlError("listing leases on the source", err)
	}
	r := &run{cfg: cfg, stats: &Stats{}, started: time.Now(),
		queue: workqueue.NewTypedRateLimitingQueue(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, maxBackoff)),
		failing: map[string]error{}}
	r.store, r.informer = cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return leases.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return leases.Watch(ctx, o)
			},
		},
		ObjectType: &coordinationv1.Lease{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    r.enqueue,
			UpdateFunc: func(_, obj any) { r.enqueue(obj) },
			DeleteFunc: r.enqueue,
		},
	})
	return r.stats, r.run(ctx)
}

// run is one Run's state.
type run struct {
	cfg      Config
	stats    *Stats
	started  time.Time
	queue    workqueue.TypedRateLimitingInterface[string]
	store    cache.Store
	informer cache.Controller
	first    *firstPass

	// failing holds a mirror's leases whose last attempt failed after
	// maxRetries or more; those still in it at the end count as errors.
	failingMu sync.Mutex
	failing   map[string]error
}

func (r *run) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		// Only an object without metadata gets here, which a lease
		// informer never delivers.
		return
	}
	r.queue.Add(key)
}

func (r *run) run(ctx context.Context) error {
	// The informer lives until run returns; its goroutine is waited for.
	informerCtx, stopInformer := context.WithCancel(context.WithoutCancel(ctx))
	var informerDone sync.WaitGroup
	informerDone.Go(func() { r.informer.RunWithContext(informerCtx) })
	defer func() {
		stopInformer()
		informerDone.Wait()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), r.informer.HasSynced) {
		r.queue.ShutDown()
		return fmt.Errorf("stopped before the source's leases were listed: %w", context.Cause(ctx))
	}
	r.first = newFirstPass(r.store.ListKeys())

	// Copies in flight finish when ctx ends (a mirror that stops must not
	// count its last writes as errors); opTimeout bounds them.
	opCtx := context.WithoutCancel(ctx)
	var workers sync.WaitGroup
	for range r.cfg.Workers {
		workers.Go(func() {
			for r.next(ctx, opCtx) {
			}
		})
	}
	progressCtx, stopProgress := context.WithCancel(ctx)
	var progress sync.WaitGroup
	progress.Go(func() { r.printProgress(progressCtx) })

	select {
	case <-r.first.done:
		fmt.Fprintf(r.cfg.Out, "%s: first pass done over %d leases: %s\n", r.elapsed(), r.first.size, r.stats)
		if r.cfg.Follow {
			fmt.Fprintf(r.cfg.Out, "following the source's leases until interrupted\n")
			<-ctx.Done()
		}
	case <-ctx.Done():
	}
	r.queue.ShutDown()
	workers.Wait()
	stopProgress()
	progress.Wait()
	for key, err := range r.failing {
		r.stats.Errors.Add(1)
		fmt.Fprintf(r.cfg.Errs, "error: lease %s: still failing: %v\n", key, err)
	}
	if n := r.stats.Errors.Load(); n > 0 {
		return fmt.Errorf("%d lease copies failed (see the error lines above)", n)
	}
	if !r.cfg.Follow && ctx.Err() != nil {
		return fmt.Errorf("interrupted before the first pass was done: %w", context.Cause(ctx))
	}
	return nil
}

// next copies or deletes one queued lease; it reports false once the
// queue is shut down. Once ctx has ended, queued leases are dropped
// rather than copied: the user asked the copy to stop.
func (r *run) next(ctx, opCtx context.Context) bool {
	key, quit := r.queue.Get()
	if quit {
		return false
	}
	defer r.queue.Done(key)
	if ctx.Err() != nil {
		return true
	}
	outcome, err := r.apply(opCtx, key)
	if err == nil {
		r.queue.Forget(key)
		r.stats.count(outcome)
		r.first.handled(key)
		r.setFailing(key, nil)
		return true
	}
	failures := r.queue.NumRequeues(key) + 1
	switch {
	case failures < maxRetries:
		r.queue.AddRateLimited(key)
	case r.cfg.Follow:
		// A mirror never drops a lease: a lease that does not change
		// again would otherwise stay stale on the target. It says so
		// once, and the first pass counts as done without it.
		if failures == maxRetries {
			fmt.Fprintf(r.cfg.Errs, "error: lease %s: %v (retrying)\n", key, err)
			r.first.handled(key)
		}
		r.setFailing(key, err)
		r.queue.AddRateLimited(key)
	default:
		r.queue.Forget(key)
		r.stats.Errors.Add(1)
		r.first.handled(key)
		fmt.Fprintf(r.cfg.Errs, "error: lease %s: %v\n", key, err)
	}
	return true
}

// setFailing records key's last failure, or its success (err nil).
func (r *run) setFailing(key string, err error) {
	r.failingMu.Lock()
	defer r.failingMu.Unlock()
	if err == nil {
		delete(r.failing, key)
	} else {
		r.failing[key] = err
	}
}

// apply makes the target's lease key match the source's newest copy, or
// deletes it when the source no longer has it.
func (r *run) apply(ctx context.Context, key string) (Outcome, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	obj, exists, err := r.store.GetByKey(key)
	if err != nil {
		return 0, fmt.Errorf("reading the informer's copy: %w", err)
	}
	if exists {
		lease, ok := obj.(*coordinationv1.Lease)
		if !ok {
			return 0, fmt.Errorf("the informer holds a %T", obj)
		}
		return r.cfg.Target.Put(ctx, lease)
	}
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, err
	}
	return r.cfg.Target.Delete(ctx, ns, name)
}

// printProgress prints a line each second in which at least 1,000 leases
// were handled since the last line: a busy copy shows its pace once a
// second, a quiet mirror (a few renewals a second) does not flood the
// terminal.
func (r *run) printProgress(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var last int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if total := r.stats.total(); total-last >= 1000 {
			last = total
			fmt.Fprintf(r.cfg.Out, "%s: %s, %d queued\n", r.elapsed(), r.stats, r.queue.Len())
		}
	}
}

func (r *run) elapsed() time.Duration { return time.Since(r.started).Round(time.Second) }

// firstPass tracks the leases listed when the informer first synced; done
// closes once each was copied or given up on.
type firstPass struct {
	mu      sync.Mutex
	pending map[string]struct{}
	size    int
	done    chan struct{}
}

func newFirstPass(keys []string) *firstPass {
	p := &firstPass{pending: make(map[string]struct{}, len(keys)), size: len(keys), done: make(chan struct{})}
	for _, k := range keys {
		p.pending[k] = struct{}{}
	}
	if len(keys) == 0 {
		close(p.done)
	}
	return p
}

func (p *firstPass) handled(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.pending[key]; !ok {
		return
	}
	delete(p.pending, key)
	if len(p.pending) == 0 {
		close(p.done)
	}
}
