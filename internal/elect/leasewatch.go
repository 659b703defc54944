package elect

import (
	"context"
	"log/slog"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// leaseWatch is an informer on the one Lease the elector campaigns for
// (list and watch with the field selector metadata.name=NAME, which the
// server authorizes as a request for that Lease alone). It calls wake each
// time the Lease shows a state in which this candidate may acquire at once
// (see acquirableNow), so that a released lease is taken in milliseconds
// instead of at the next retry.
//
// The watch only ever makes the elector try sooner; whether it may take
// the lease is still decided by client-go on a fresh read (see
// campaign.go). Without the watch (it is forbidden, or the server is away)
// the elector polls every retry period as before.
type leaseWatch struct {
	factory informers.SharedInformerFactory
	cancel  context.CancelFunc
}

// startLeaseWatch starts the informer; ctx carries the logger client-go
// logs to. stop must be called to end it.
func startLeaseWatch(ctx context.Context, c kubernetes.Interface, ns, name, identity string, coordinated bool, wake func(), log *slog.Logger) (*leaseWatch, error) {
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	factory := informers.NewSharedInformerFactoryWithOptions(c, 0,
		informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = selector }))
	inf := factory.Coordination().V1().Leases().Informer()
	ctx, cancel := context.WithCancel(ctx)
	w := &leaseWatch{factory: factory, cancel: cancel}

	check := func(obj any) {
		if l, ok := obj.(*coordinationv1.Lease); ok && l.Name == name && acquirableNow(l, identity, coordinated) {
			wake()
		}
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    check,
		UpdateFunc: func(_, obj any) { check(obj) },
		DeleteFunc: func(any) {
			// A deleted lease can be created at once, except in
			// coordinated election, where only the controller writes it.
			if !coordinated {
				wake()
			}
		},
	})
	if err != nil {
		cancel()
		return nil, err
	}
	err = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) {
			// Stop asking: the elector still polls every retry period.
			log.Warn("cannot watch the lease (grant list and watch on it for fast hand-over); a released lease is noticed at the next retry", "err", err)
			cancel()
			return
		}
		log.Info("lease watch interrupted; the informer resumes it", "err", err)
	})
	if err != nil {
		cancel()
		return nil, err
	}
	factory.StartWithContext(ctx)
	return w, nil
}

// stop ends the informer and waits for its goroutines.
func (w *leaseWatch) stop() {
	w.cancel()
	w.factory.Shutdown()
}

// acquirableNow reports whether the Lease, as seen by the watch, may be
// acquired without waiting a lease duration: it is released (client-go's
// release, which elect uses, writes an empty holderIdentity and
// leaseDurationSeconds 1; client-go takes a lease with an empty holder at
// once), or it already names this identity (in coordinated election, the
// controller has just elected us). A lease held by anyone else is never
// acquirable now, whatever its renewTime says: takeover waits until client-go
// has seen the record unchanged for a lease duration on its own clock.
func acquirableNow(l *coordinationv1.Lease, identity string, coordinated bool) bool {
	holder := ""
	if h := l.Spec.HolderIdentity; h != nil {
		holder = *h
	}
	if holder == identity {
		return true
	}
	return holder == "" && !coordinated
}
