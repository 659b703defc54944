package apiserveridentity

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/leasehold/leasehold/internal/controller"
	"github.com/leasehold/leasehold/internal/leasecontroller"
)

// Name is used in logs.
const Name = "apiserver-identity-controller"

// hostnameLabel is the well-known kubernetes.io/hostname label.
const hostnameLabel = corev1.LabelHostname

// Controller runs the identity lease of this replica and the collector of
// the expired ones. Build it with New or NewWithLister.
type Controller struct {
	// err is a configuration error (no hostname) that Run reports.
	err      error
	cfg      Config
	lease    *leasecontroller.Controller
	gc       *Collector
	log      *slog.Logger
	leaseRef string
	holder   string
}

// New returns the controller of the server whose dependencies are cc; the
// collector reads identity leases from the watch cache.
func New(cc controller.Context, cfg Config) *Controller {
	res, served := cc.Resources.Lookup(coordinationv1.GroupName, "v1", "leases")
	selector := labels.SelectorFromSet(labels.Set{IdentityLabel: Component})
	list := func() []*coordinationv1.Lease {
		if !served {
			return nil
		}
		objs, _ := cc.Cache.List(res.KeyPrefix(metav1.NamespaceSystem), func(o runtime.Object) bool {
			l, ok := o.(*coordinationv1.Lease)
			return ok && selector.Matches(labels.Set(l.Labels))
		})
		out := make([]*coordinationv1.Lease, 0, len(objs))
		for _, o := range objs {
			out = append(out, o.(*coordinationv1.Lease))
		}
		return out
	}
	return NewWithLister(list, cc.Client, cc.Logger, cc.Now, cfg)
}

// NewWithLister returns a controller that writes its lease and deletes
// expired ones through client and finds identity leases with list; now nil
// means time.Now (it judges expiry; renewals use the real clock).
func NewWithLister(list Lister, client kubernetes.Interface, log *slog.Logger, now func() time.Time, cfg Config) *Controller {
	log = log.With("controller", Name)
	c := &Controller{log: log, gc: NewCollector(list, client, log, now)}
	if c.cfg, c.err = cfg.withDefaults(); c.err != nil {
		return c
	}
	name, err := LeaseName(c.cfg.Hostname)
	if err != nil {
		c.err = err
		return c
	}
	c.leaseRef = metav1.NamespaceSystem + "/" + name
	// A new uuid per process start tells a restarted replica's lease from
	// the previous process's, under the same stable name.
	c.holder = name + "_" + string(uuid.NewUUID())
	c.lease, c.err = leasecontroller.New(leasecontroller.Config{
		Leases:          client.CoordinationV1().Leases(metav1.NamespaceSystem),
		Namespace:       metav1.NamespaceSystem,
		Name:            name,
		HolderIdentity:  c.holder,
		DurationSeconds: c.cfg.LeaseDurationSeconds,
		RenewInterval:   c.cfg.RenewInterval,
		Clock:           clock.RealClock{},
		Logger:          log,
		Description:     "apiserver identity lease",
		Prepare:         labelLease(c.cfg.Hostname),
	})
	return c
}

// Name implements controller.Runner.
func (c *Controller) Name() string { return Name }

// Lease is the namespace/name of this replica's identity lease.
func (c *Controller) Lease() string { return c.leaseRef }

// HolderIdentity is this process's holder identity.
func (c *Controller) HolderIdentity() string { return c.holder }

// Run renews the lease and collects expired ones (at once, then every
// GCPeriod, as wait.Until does) until ctx ends; it returns once both loops
// have stopped.
func (c *Controller) Run(ctx context.Context) error {
	if c.err != nil {
		return fmt.Errorf("%s: %w", Name, c.err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { c.lease.Run(ctx) })
	wg.Go(func() { c.collect(ctx) })
	wg.Wait()
	return nil
}

func (c *Controller) collect(ctx context.Context) {
	t := time.NewTicker(c.cfg.GCPeriod)
	defer t.Stop()
	for {
		if n, err := c.gc.Collect(ctx); err != nil && ctx.Err() == nil {
			c.log.Error("collecting expired apiserver identity leases", "deleted", n, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// labelLease is kube-apiserver's labelAPIServerHeartbeatFunc: identity and
// hostname labels on every write, plus the 1.26 component label so that
// both generations of `kubectl get lease -l ...` find the replica.
func labelLease(hostname string) func(context.Context, *coordinationv1.Lease) error {
	return func(_ context.Context, l *coordinationv1.Lease) error {
		if l.Labels == nil {
			l.Labels = map[string]string{}
		}
		l.Labels[IdentityLabel] = Component
		l.Labels[LegacyComponentLabel] = Component
		l.Labels[hostnameLabel] = hostname
		return nil
	}
}
