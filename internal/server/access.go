package server

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"

	"github.com/leasehold/leasehold/internal/admission"
	"github.com/leasehold/leasehold/internal/admission/namespacelifecycle"
	"github.com/leasehold/leasehold/internal/admission/noderestriction"
	"github.com/leasehold/leasehold/internal/admission/rbacescalation"
	"github.com/leasehold/leasehold/internal/authn"
	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/authz/chain"
	"github.com/leasehold/leasehold/internal/authz/rbac"
	"github.com/leasehold/leasehold/internal/cluster"
	"github.com/leasehold/leasehold/internal/registry"
	nsregistry "github.com/leasehold/leasehold/internal/registry/namespace"
	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// access is who a caller is and what it may do: the authenticator, the
// authorization chain and the admission that runs on every write. Both
// keep state current from a watch (the token file; the RBAC policy), which
// startBackground runs for the server's lifetime.
type access struct {
	authenticator *authn.Chain
	*authorizationChain
	// reviews: the API answers the access reviews with this chain. Behind
	// a cluster they are the cluster's to answer.
	reviews bool
}

// openAccess builds access control. On its own (cl nil), serve
// authenticates with its CA, --client-ca-file and --token-auth-file, and
// authorizes with the RBAC objects it stores (read from the watch cache in
// objs). Behind a cluster, the cluster's delegated authentication comes
// first and its RBAC, namespaces and SubjectAccessReviews decide.
func openAccess(cfg Config, clientCAs *x509.CertPool, cl *cluster.Cluster, objs *objectLayer, store storage.Interface) (*access, error) {
	log := cfg.Logger
	var (
		authorizer *authorizationChain
		delegated  authn.Authenticator
		err        error
	)
	if cl != nil {
		authorizer, err = newClusterAuthorization(cfg, cl)
		delegated = cl.Authenticator()
	} else {
		authorizer, err = newAuthorization(cfg, objs.cache, store, objs.stored, log)
	}
	if err != nil {
		return nil, fmt.Errorf("authorization: %w", err)
	}
	authenticator, err := newAuthenticator(cfg, clientCAs, delegated)
	if err != nil {
		return nil, fmt.Errorf("authentication: %w", err)
	}
	return &access{authenticator: authenticator, authorizationChain: authorizer, reviews: cl == nil}, nil
}

// newAuthenticator builds the request authenticator from serve's flags, as
// kube-apiserver composes it: client certificates verified against
// clientCAs (the CA in DataDir plus --client-ca-file, i.e. the TLS config's
// ClientCAs), static bearer tokens from --token-auth-file, and anonymous
// requests unless --anonymous-auth=false. A token file that cannot be loaded
// stops the server with kube-apiserver's message.
//
// The chain's Run must run for the server's lifetime (with the other
// background work): it re-reads the token file when it changes.
//
// Behind a cluster, the cluster's delegated authentication (delegated, from
// internal/cluster) is asked first: kube-apiserver's front-proxy headers,
// the cluster's client certificates and its TokenReviews; Leasehold's own
// CA still admits its admin kubeconfig.
func newAuthenticator(cfg Config, clientCAs *x509.CertPool, delegated authn.Authenticator) (*authn.Chain, error) {
	ac := authn.Config{
		ClientCAs: clientCAs,
		TokenFile: cfg.TokenAuthFile,
		Anonymous: !cfg.DisableAnonymousAuth,
		Delegated: delegated,
	}
	if cfg.Logger != nil {
		ac.Logger = cfg.Logger.With("component", "authn")
	}
	return authn.New(ac)
}

// authorizationChain is serve's --authorization-mode chain (system:masters, then
// Node and RBAC by default) over the RBAC policy kept current from the watch
// cache, and the admission checks that run on every write, in
// kube-apiserver's order: NamespaceLifecycle, NodeRestriction, then RBAC's
// escalation check (which kube-apiserver runs in its RBAC storage).
type authorizationChain struct {
	chain.Chain
	admission admission.Chain
	// run keeps the policy current until ctx ends (for the server's
	// lifetime, with the background work); waitSynced returns once it
	// reflects every RBAC object, before the first request is served.
	run        func(ctx context.Context) error
	waitSynced func(ctx context.Context) error
}

// newAuthorization builds the chain; policy.Run must run for the server's
// lifetime and policy.WaitSynced before the first request is served.
func newAuthorization(cfg Config, cache *watchcache.Cache, store storage.Interface, resources *registry.Set, log *slog.Logger) (*authorizationChain, error) {
	policy := rbac.NewCacheSource(cache, log.With("component", "rbac"))
	c, err := modeChain(cfg, policy)
	if err != nil {
		return nil, err
	}
	nsRes, ok := resources.Lookup("", "v1", "namespaces")
	if !ok {
		return nil, fmt.Errorf("authorization: namespaces are not served")
	}
	cached, live := namespacelifecycle.FromCache(cache, store, nsRes)
	return &authorizationChain{
		Chain:      c,
		run:        policy.Run,
		waitSynced: policy.WaitSynced,
		admission: admission.Chain{
			namespacelifecycle.New(cached, live, nsregistry.System, nil),
			noderestriction.Plugin{},
			rbacescalation.New(c.Authorizer, policy, log.With("component", "rbac-escalation")),
		},
	}, nil
}

// modeChain is --authorization-mode's chain, its RBAC mode judging with
// the policy src keeps: the server's own RBAC objects, or the cluster's.
func modeChain(cfg Config, src rbac.Source) (chain.Chain, error) {
	modes, err := chain.ParseModes(cfg.AuthorizationModes)
	if err != nil {
		return chain.Chain{}, err
	}
	return chain.New(modes, chain.RBAC{Authorizer: rbac.NewAuthorizer(src), Rules: rbac.NewRulesReviewer(src)})
}

// newClusterAuthorization is the authorization behind a cluster:
// system:masters, then --authorization-mode's Node and RBAC over the
// cluster's RBAC objects as watched (so a renewal, or a controller's
// election, is decided without a round trip), then a SubjectAccessReview to
// the cluster for whatever they did not allow. Admission is what
// kube-apiserver does not run for requests it proxies: NamespaceLifecycle
// over the cluster's namespaces, and NodeRestriction.
func newClusterAuthorization(cfg Config, cl *cluster.Cluster) (*authorizationChain, error) {
	c, err := modeChain(cfg, cl.RBAC())
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
