package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/leasehold/leasehold/internal/admission/namespacelifecycle"
	"github.com/leasehold/leasehold/internal/authn"
	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/authz/rbac"
)

// Cluster is the cluster Leasehold serves behind. Build it with Open, run
// it with Run for the server's lifetime, and serve only after WaitSynced.
type Cluster struct {
	authn     *delegatedAuthn
	rbac      *rbacSource
	review    *reviewAuthorizer
	informers informers.SharedInformerFactory
	nsSynced  cache.InformerSynced
	cached    namespacelifecycle.Getter
	live      namespacelifecycle.Getter
	log       *slog.Logger
	primed    chan struct{} // closed once the authentication settings were loaded
}

// Open connects to the cluster named by cfg's kubeconfigs. Nothing is read
// until Run.
func Open(cfg Config) (*Cluster, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	authnClient, authzClient, err := cfg.clients()
	if err != nil {
		return nil, err
	}
	a, err := newDelegatedAuthn(cfg, authnClient)
	if err != nil {
		return nil, err
	}
	// The informers' resync is off: the RBAC policy is rebuilt on change
	// and namespaces are read, never reconciled.
	inf := informers.NewSharedInformerFactory(authzClient, 0)
	src, err := newRBACSource(inf.Rbac().V1(), log.With("component", "cluster-rbac"))
	if err != nil {
		return nil, err
	}
	nsInf := inf.Core().V1().Namespaces()
	c := &Cluster{
		authn:     a,
		rbac:      src,
		review:    newReviewAuthorizer(authzClient.AuthorizationV1()),
		informers: inf,
		nsSynced:  nsInf.Informer().HasSynced,
		log:       log,
		primed:    make(chan struct{}),
	}
	c.cached, c.live = namespaceGetters(nsInf, authzClient)
	return c, nil
}

// Authenticator is the delegated authentication (authenticate.go), to be
// asked before Leasehold's own authenticators.
func (c *Cluster) Authenticator() authn.Authenticator { return c.authn }

// RBAC is the policy source over the cluster's RBAC objects, for
// Leasehold's RBAC authorizer and rule resolver.
func (c *Cluster) RBAC() rbac.Source { return c.rbac }

// Review is the authorizer that asks the cluster; it goes last in the
// chain.
func (c *Cluster) Review() authz.Authorizer { return c.review }

// Namespaces are NamespaceLifecycle's getters over the cluster's
// namespaces.
func (c *Cluster) Namespaces() (cached, live namespacelifecycle.Getter) { return c.cached, c.live }

// Run watches the cluster until ctx ends, and returns after every informer
// and controller it started has stopped.
func (c *Cluster) Run(ctx context.Context) {
	var wg sync.WaitGroup
	c.informers.Start(ctx.Done())
	wg.Go(func() { c.rbac.run(ctx) })
	wg.Go(func() {
		if err := c.authn.prime(ctx); err != nil && ctx.Err() == nil {
			c.log.Error("loading the cluster's authentication settings", "err", err)
		}
		close(c.primed)
		c.authn.run(ctx)
	})
	wg.Wait()
	c.informers.Shutdown()
}

// authnSettleTimeout bounds the wait for the cluster's CA bundles at start:
// a cluster without a request-header CA still gets its lease API, and its
// proxied requests are refused (401) until the CA appears.
const authnSettleTimeout = 30 * time.Second

// WaitSynced returns once the RBAC policy and the namespaces reflect the
// cluster, and the authentication settings were loaded, or ctx ends.
func (c *Cluster) WaitSynced(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), c.nsSynced) {
		return fmt.Errorf("waiting for the cluster's namespaces: %w", ctx.Err())
	}
	select {
	case <-c.rbac.built:
	case <-ctx.Done():
		return fmt.Errorf("waiting for the cluster's RBAC policy: %w", ctx.Err())
	}
	select {
	case <-c.primed:
	case <-ctx.Done():
		return fmt.Errorf("waiting for the cluster's authentication settings: %w", ctx.Err())
	}
	settle, cancel := context.WithTimeout(ctx, authnSettleTimeout)
	defer cancel()
	if err := c.authn.waitCAs(settle); err != nil {
		if ctx.Err() != nil {
			return err
		}
		c.log.Warn("the cluster publishes no client or request-header CA yet; requests they would authenticate are refused until it does", "err", err)
	}
	return nil
}
