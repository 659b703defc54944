package apiserveridentity

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Lister returns the identity leases of kube-system (those labelled
// Selector); the objects may be shared and must not be modified.
type Lister func() []*coordinationv1.Lease

// Collector deletes expired identity leases: those of replicas that
// stopped renewing more than a lease duration ago.
type Collector struct {
	list   Lister
	client kubernetes.Interface
	log    *slog.Logger
	now    func() time.Time
}

// NewCollector returns a collector that finds candidates with list and
// re-reads and deletes them through client; now nil means time.Now.
func NewCollector(list Lister, client kubernetes.Interface, log *slog.Logger, now func() time.Time) *Collector {
	if now == nil {
		now = time.Now
	}
	return &Collector{list: list, client: client, log: log, now: now}
}

// Collect runs one pass and returns how many leases it deleted; it goes on
// past individual failures and reports them all.
func (g *Collector) Collect(ctx context.Context) (int, error) {
	var errs []error
	deleted := 0
	for _, l := range g.list() {
		if !expired(l, g.now()) {
			continue
		}
		ok, err := g.deleteIfExpired(ctx, l.Name)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			deleted++
		}
	}
	return deleted, errors.Join(errs...)
}

// expired is kube-apiserver's isLeaseExpired: a lease missing renewTime or
// leaseDurationSeconds is invalid for an identity lease and counts as
// expired, as does one whose renewTime + duration is before now.
func expired(l *coordinationv1.Lease, now time.Time) bool {
	rt, d := l.Spec.RenewTime, l.Spec.LeaseDurationSeconds
	return rt == nil || d == nil || rt.Add(time.Duration(*d)*time.Second).Before(now)
}

// deleteIfExpired re-reads the lease from the server (the cache may lag, and
// the replica may have come back) and deletes that very version if it is
// still expired. A lease already gone was most likely collected by another
// replica, which is not an error.
func (g *Collector) deleteIfExpired(ctx context.Context, name string) (bool, error) {
	leases := g.client.CoordinationV1().Leases(metav1.NamespaceSystem)
	fresh, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get identity lease %s/%s: %w", metav1.NamespaceSystem, name, err)
	}
	if !expired(fresh, g.now()) {
		return false, nil
	}
	rv := fresh.ResourceVersion
	err = leases.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
	switch {
	case err == nil:
		g.log.Info("deleted expired apiserver identity lease", "lease", metav1.NamespaceSystem+"/"+name,
			"holder", ptrString(fresh.Spec.HolderIdentity), "hostname", fresh.Labels[hostnameLabel])
		return true, nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone already, or renewed since the read: nothing to do.
		return false, nil
	default:
		return false, fmt.Errorf("delete identity lease %s/%s: %w", metav1.NamespaceSystem, name, err)
	}
}

func ptrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
