package server

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/internal/apiserver"
	"github.com/leasehold/leasehold/internal/bootstrappolicy"
	"github.com/leasehold/leasehold/internal/controller"
	"github.com/leasehold/leasehold/internal/controller/apiserveridentity"
	"github.com/leasehold/leasehold/internal/controller/clusterroleaggregation"
	"github.com/leasehold/leasehold/internal/controller/election"
	"github.com/leasehold/leasehold/internal/controller/eventttl"
	"github.com/leasehold/leasehold/internal/controller/garbagecollector"
	"github.com/leasehold/leasehold/internal/controller/leasecandidategc"
	"github.com/leasehold/leasehold/internal/controller/namespaces"
	"github.com/leasehold/leasehold/internal/controller/nodelifecycle"
	"github.com/leasehold/leasehold/internal/controller/rbacbootstrap"
	nsregistry "github.com/leasehold/leasehold/internal/registry/namespace"
	"github.com/leasehold/leasehold/internal/request"
)

// startStandalone does what serve does in a world of its own: the server
// itself (system:apiserver in system:masters) creates the system namespaces
// and the bootstrap RBAC policy before it serves, and starts the
// controllers a cluster would run, each under its own service account, on
// the background work (bg). The elected ones stop as soon as ctx ends
// (startControllers).
func startStandalone(ctx context.Context, bg *background, cfg Config, api *apiserver.Server, objs *objectLayer, probe *storeProbe, reg prometheus.Registerer) error {
	log := cfg.Logger
	loopback, err := kubernetes.NewForConfig(api.ServerLoopbackConfig())
	if err != nil {
		return fmt.Errorf("loopback client: %w", err)
	}
	if err := namespaces.Ensure(ctx, loopback, nsregistry.System); err != nil {
		return err
	}
	if err := rbacbootstrap.Ensure(ctx, loopback); err != nil {
		return fmt.Errorf("bootstrap RBAC policy: %w", err)
	}
	bg.run(func(ctx context.Context) {
		namespaces.Run(ctx, loopback, nsregistry.System, namespaces.Interval, log.With("controller", "namespaces"))
	})
	cfg.NodeLifecycle.StoreStatus = probe.nodeLifecycleStatus
	if cfg.NodeLifecycle.OnMonitorPass == nil {
		cfg.NodeLifecycle.OnMonitorPass = newMonitorPassMetric(reg)
	}
	cc := controller.Context{Cache: objs.cache, Client: loopback, Resources: objs.stored, Logger: log, Now: time.Now}
	return startControllers(ctx, bg.ctx, &bg.wg, cc, newControllerClients(api), api, cfg)
}

// startControllers starts every controller group on the background wait
// group bg: the every-replica controllers directly, until bgCtx ends; the
// controller-manager ones under leader election as user
// system:kube-controller-manager (or directly with --leader-elect=false),
// and the coordinated election ones under leader election through the
// server's own loopback client, as kube-apiserver does. The elected ones
// stop, and their Leases are released, as soon as serveCtx ends (SIGTERM),
// so that another replica takes over without waiting for this one's HTTP
// drain.
func startControllers(serveCtx, bgCtx context.Context, bg *sync.WaitGroup, cc controller.Context, clients *controllerClients, api *apiserver.Server, cfg Config) error {
	if err := cfg.Replica.Validate(); err != nil {
		return err
	}
	if err := cfg.Replica.defaults(); err != nil {
		return err
	}
	// kube-controller-manager's own user, bound to its bootstrap roles
	// (system:kube-controller-manager, and the leader-locking Role in
	// kube-system that lets it create and renew Leases there).
	kcm, err := kubernetes.NewForConfig(api.LoopbackConfig(request.User{
		Name:   bootstrappolicy.KubeControllerManager,
		Groups: []string{request.AllAuthenticated},
	}))
	if err != nil {
		return fmt.Errorf("loopback client for %s: %w", bootstrappolicy.KubeControllerManager, err)
	}
	every, err := controllers(cc, clients, cfg, everyReplica)
	if err != nil {
		return err
	}
	identity := newIdentity(cfg.Replica.Hostname)
	elected := func(lease string, client kubernetes.Interface, group controllerGroup) *electedControllers {
		return &electedControllers{
			lease: lease, identity: identity, client: client, timing: cfg.Replica,
			build: func() ([]controller.Runner, error) { return controllers(cc, clients, cfg, group) },
			log:   cc.Logger.With("component", "leader-election"),
			exit:  os.Exit,
		}
	}
	leaderOnly := []controller.Runner{elected(ElectionControllerLease, cc.Client, coordinatedElection)}
	if cfg.Replica.DisableLeaderElection {
		managers, err := controllers(cc, clients, cfg, controllerManager)
		if err != nil {
			return err
		}
		every = append(every, managers...)
	} else {
		leaderOnly = append(leaderOnly, elected(ControllerManagerLease, kcm, controllerManager))
	}
	run := func(ctx context.Context, c controller.Runner) {
		if err := c.Run(ctx); err != nil && ctx.Err() == nil {
			cc.Logger.Error("controller stopped", "controller", c.Name(), "err", err)
		}
	}
	for _, c := range every {
		bg.Go(func() { run(bgCtx, c) })
	}
	bg.Go(func() {
		ctx, cancel := context.WithCancel(bgCtx)
		defer cancel()
		defer context.AfterFunc(serveCtx, cancel)()
		var wg sync.WaitGroup
		for _, c := range leaderOnly {
			wg.Go(func() { run(ctx, c) })
		}
		wg.Wait()
	})
	return nil
}

// controllerGroup says where a controller runs among several replicas.
type controllerGroup int

const (
	// everyReplica: the API server's own work (its identity lease and the
	// collection of expired ones), on every replica, as kube-apiserver's
	// post-start hooks.
	everyReplica controllerGroup = iota
	// controllerManager: kube-controller-manager's controllers, on the
	// replica holding Lease kube-system/leasehold-controller-manager.
	controllerManager
	// coordinatedElection: KEP-4355's election controller and lease
	// candidate collector, on the replica holding Lease
	// kube-system/leader-election-controller, as kube-apiserver runs them.
	coordinatedElection
)

// controllers builds new instances of the controllers of group, given their
// shared dependencies (a controller runs once, so every leadership term
// builds its own). Each writes through a loopback client of its own service
// account (bootstrappolicy's controller names), so RBAC authorizes it with
// its system:controller:<name> binding and the audit trail names it. Each
// returns when its context ends.
func controllers(cc controller.Context, clients *controllerClients, cfg Config, group controllerGroup) ([]controller.Runner, error) {
	as := func(name string) (controller.Context, error) {
		c, err := clients.For(name)
		if err != nil {
			return controller.Context{}, err
		}
		own := cc
		own.Client = c
		return own, nil
	}
	build := []struct {
		group   controllerGroup
		account string
		new     func(controller.Context) controller.Runner
	}{
		{coordinatedElection, bootstrappolicy.LeaderElectionController, func(c controller.Context) controller.Runner { return election.New(c, election.Config{}) }},
		{coordinatedElection, bootstrappolicy.LeaseCandidateGCController, func(c controller.Context) controller.Runner {
			return leasecandidategc.New(c, leasecandidategc.Config{})
		}},
		{controllerManager, bootstrappolicy.GarbageCollector, func(c controller.Context) controller.Runner { return garbagecollector.New(c) }},
		{controllerManager, bootstrappolicy.NodeController, func(c controller.Context) controller.Runner { return nodelifecycle.New(c, cfg.NodeLifecycle) }},
		{controllerManager, bootstrappolicy.EventTTLController, func(c controller.Context) controller.Runner {
			return eventttl.New(c, eventttl.Config{TTL: cfg.EventTTL, Interval: cfg.EventTTLInterval})
		}},
		{everyReplica, bootstrappolicy.APIServerIdentityController, func(c controller.Context) controller.Runner {
			return apiserveridentity.New(c, cfg.Replica.identity())
		}},
		{controllerManager, bootstrappolicy.ClusterRoleAggregationController, func(c controller.Context) controller.Runner { return clusterroleaggregation.New(c) }},
		{controllerManager, bootstrappolicy.NamespaceController, func(c controller.Context) controller.Runner {
			return namespaces.New(c.Client, c.Resources, c.Logger, c.Now)
		}},
	}
	var runners []controller.Runner
	for _, b := range build {
		if b.group != group {
			continue
		}
		c, err := as(b.account)
		if err != nil {
			return nil, err
		}
		runners = append(runners, b.new(c))
	}
	return runners, nil
}

// newMonitorPassMetric is the node lifecycle controller's pass duration.
func newMonitorPassMetric(reg prometheus.Registerer) func(time.Duration, int) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "leasehold_nodelifecycle_monitor_pass_duration_seconds",
		Help:    "Duration of one node lifecycle monitor pass over every node.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18),
	})
	reg.MustRegister(h)
	return func(d time.Duration, _ int) { h.Observe(d.Seconds()) }
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
