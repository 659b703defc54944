package server

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/internal/admission"
	"github.com/leasehold/leasehold/internal/admission/namespacelifecycle"
	"github.com/leasehold/leasehold/internal/admission/noderestriction"
	"github.com/leasehold/leasehold/internal/admission/rbacescalation"
	"github.com/leasehold/leasehold/internal/apiserver"
	"github.com/leasehold/leasehold/internal/authz/chain"
	"github.com/leasehold/leasehold/internal/authz/rbac"
	"github.com/leasehold/leasehold/internal/bootstrappolicy"
	"github.com/leasehold/leasehold/internal/registry"
	nsregistry "github.com/leasehold/leasehold/internal/registry/namespace"
	"github.com/leasehold/leasehold/internal/request"
	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/watchcache"
)

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
	modes, err := chain.ParseModes(cfg.AuthorizationModes)
	if err != nil {
		return nil, err
	}
	policy := rbac.NewCacheSource(cache, log.With("component", "rbac"))
	c, err := chain.New(modes, chain.RBAC{Authorizer: rbac.NewAuthorizer(policy), Rules: rbac.NewRulesReviewer(policy)})
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

// controllerClients hands each in-process controller a loopback client
// that acts as the controller's own service account
// (system:serviceaccount:kube-system:<name>), authorized by its bootstrap
// ClusterRoleBinding system:controller:<name> like any other caller, so the
// audit trail names who did what.
type controllerClients struct {
	api    *apiserver.Server
	mu     sync.Mutex
	byName map[string]kubernetes.Interface
}

func newControllerClients(api *apiserver.Server) *controllerClients {
	return &controllerClients{api: api, byName: map[string]kubernetes.Interface{}}
}

// For returns the client of the controller whose service account is name.
func (c *controllerClients) For(name string) (kubernetes.Interface, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.byName[name]; ok {
		return cl, nil
	}
	cl, err := kubernetes.NewForConfig(c.api.LoopbackConfig(controllerUser(name)))
	if err != nil {
		return nil, fmt.Errorf("loopback client for %s: %w", name, err)
	}
	c.byName[name] = cl
	return cl, nil
}

// controllerUser is a kube-system service account's identity, with the
// groups kube-apiserver gives service accounts.
func controllerUser(name string) request.User {
	return request.User{
		Name:   bootstrappolicy.ControllerUser(name),
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", request.AllAuthenticated},
	}
}
