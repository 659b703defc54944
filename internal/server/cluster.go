package server

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/leasehold/leasehold/internal/admission"
	"github.com/leasehold/leasehold/internal/admission/namespacelifecycle"
	"github.com/leasehold/leasehold/internal/admission/noderestriction"
	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/authz/chain"
	"github.com/leasehold/leasehold/internal/authz/rbac"
	"github.com/leasehold/leasehold/internal/cluster"
	nsregistry "github.com/leasehold/leasehold/internal/registry/namespace"
)

// Behind a cluster (--authentication-kubeconfig), serve is the aggregated
// API server of coordination.k8s.io and nothing else: the cluster keeps
// Nodes, namespaces, events and RBAC, decides who callers are and what they
// may do, and runs the controllers (node lifecycle, garbage collector,
// namespaces) through its API, as it would with leases in etcd. So in this
// mode serve stores only what the APIServices route to it, runs none of its
// own controllers, and creates no system namespaces or bootstrap policy.

// newClusterAuthorization is the authorization behind a cluster:
// system:masters, then --authorization-mode's Node and RBAC over the
// cluster's RBAC objects as watched (so a renewal, or a controller's
// election, is decided without a round trip), then a SubjectAccessReview to
// the cluster for whatever they did not allow. Admission is what
// kube-apiserver does not run for requests it proxies: NamespaceLifecycle
// over the cluster's namespaces, and NodeRestriction.
func newClusterAuthorization(cfg Config, cl *cluster.Cluster, log *slog.Logger) (*authorizationChain, error) {
	modes, err := chain.ParseModes(cfg.AuthorizationModes)
	if err != nil {
		return nil, err
	}
	src := cl.RBAC()
	c, err := chain.New(modes, chain.RBAC{Authorizer: rbac.NewAuthorizer(src), Rules: rbac.NewRulesReviewer(src)})
	if err != nil {
		return nil, err
	}
	c.Authorizer = authz.Union{c.Authorizer, cl.Review()}
	cached, live := cl.Namespaces()
	return &authorizationChain{
		Chain:      c,
		run:        func(ctx context.Context) error { cl.Run(ctx); return nil },
		waitSynced: cl.WaitSynced,
		admission: admission.Chain{
			namespacelifecycle.New(cached, live, nsregistry.System, nil),
			noderestriction.Plugin{},
		},
	}, nil
}

// openCluster connects to the cluster when serve runs behind one (nil
// otherwise).
func openCluster(cfg Config, log *slog.Logger) (*cluster.Cluster, error) {
	if !cfg.Cluster.Enabled() {
		return nil, nil
	}
	cc := cfg.Cluster
	cc.Logger = log.With("component", "cluster")
	if cc.ClientCAFile == "" {
		cc.ClientCAFile = cfg.ClientCAFile
	}
	cl, err := cluster.Open(cc)
	if err != nil {
		return nil, fmt.Errorf("serving behind a cluster: %w", err)
	}
	return cl, nil
}
