// Package leasecandidategc deletes LeaseCandidates whose candidate stopped
// renewing, as kube-apiserver's LeaseCandidate garbage collector does: every
// Period it looks for candidates whose spec.renewTime is older than
// Validity, re-reads each one from the server (the watch cache may lag), and
// deletes it only if it is still stale, with a resourceVersion precondition
// so that a candidate renewed in between is never deleted.
//
// Invariants: reads of the watch cache never modify the shared objects; the
// collector never deletes a candidate whose latest stored renewTime is
// within Validity.
package leasecandidategc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/internal/controller"
)

// Name is used in logs.
const Name = "leasecandidate-gc-controller"

// Kubernetes' defaults (LeaseCandidateGCPeriod and the candidate validity).
const (
	DefaultPeriod   = 30 * time.Minute
	DefaultValidity = 30 * time.Minute
)

// Config tunes the collector; zero fields take the defaults.
type Config struct {
	Period   time.Duration
	Validity time.Duration
}

// Lister returns the current LeaseCandidates of every namespace; the
// objects may be shared and must not be modified.
type Lister func() []*coordinationv1beta1.LeaseCandidate

// Collector is the garbage collector. Build it with New or NewWithLister.
type Collector struct {
	cfg    Config
	list   Lister
	client kubernetes.Interface
	log    *slog.Logger
	now    func() time.Time
}

// New returns the collector of the server whose dependencies are cc; it
// reads candidates from the watch cache (none when LeaseCandidates are not
// served).
func New(cc controller.Context, cfg Config) *Collector {
	res, served := cc.Resources.Lookup(coordinationv1beta1.GroupName, "v1beta1", "leasecandidates")
	list := func() []*coordinationv1beta1.LeaseCandidate {
		if !served {
			return nil
		}
		objs, _ := cc.Cache.List(res.KeyPrefix(""), nil)
		out := make([]*coordinationv1beta1.LeaseCandidate, 0, len(objs))
		for _, o := range objs {
			if c, ok := o.(*coordinationv1beta1.LeaseCandidate); ok {
				out = append(out, c)
			}
		}
		return out
	}
	return NewWithLister(list, cc.Client, cc.Logger, cc.Now, cfg)
}

// NewWithLister returns a collector that finds candidates with list and
// re-reads and deletes them through client; now nil means time.Now.
func NewWithLister(list Lister, client kubernetes.Interface, log *slog.Logger, now func() time.Time, cfg Config) *Collector {
	if cfg.Period <= 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.Validity <= 0 {
		cfg.Validity = DefaultValidity
	}
	if now == nil {
		now = time.Now
	}
	return &Collector{cfg: cfg, list: list, client: client, log: log.With("controller", Name), now: now}
}

// Name implements controller.Runner.
func (g *Collector) Name() string { return Name }

// Run collects every Period until ctx ends.
func (g *Collector) Run(ctx context.Context) error {
	t := time.NewTicker(g.cfg.Period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if n, err := g.Collect(ctx); err != nil && ctx.Err() == nil {
				g.log.Error("collecting expired lease candidates", "deleted", n, "err", err)
			}
		}
	}
}

// Collect runs one pass and returns how many candidates it deleted; it
// goes on past individual failures and reports them all.
func (g *Collector) Collect(ctx context.Context) (int, error) {
	var errs []error
	deleted := 0
	for _, c := range g.list() {
		if !g.stale(c) {
			continue
		}
		ok, err := g.deleteIfStale(ctx, c.Namespace, c.Name)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			deleted++
		}
	}
	return deleted, errors.Join(errs...)
}

// stale: no renewTime, or renewTime older than Validity.
func (g *Collector) stale(c *coordinationv1beta1.LeaseCandidate) bool {
	rt := c.Spec.RenewTime
	return rt == nil || rt.Add(g.cfg.Validity).Before(g.now())
}

// deleteIfStale re-reads the candidate and deletes that very version if it
// is still stale.
func (g *Collector) deleteIfStale(ctx context.Context, ns, name string) (bool, error) {
	cands := g.client.CoordinationV1beta1().LeaseCandidates(ns)
	fresh, err := cands.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get lease candidate %s/%s: %w", ns, name, err)
	}
	if !g.stale(fresh) {
		return false, nil
	}
	rv := fresh.ResourceVersion
	err = cands.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
	switch {
	case err == nil:
		g.log.Info("deleted expired lease candidate", "namespace", ns, "name", name, "leaseName", fresh.Spec.LeaseName)
		return true, nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone already, or renewed since the read: nothing to do.
		return false, nil
	default:
		return false, fmt.Errorf("delete lease candidate %s/%s: %w", ns, name, err)
	}
}
