package server

import (
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
)

// controllers lists the controllers `serve` runs, given their shared
// dependencies. Each writes through a loopback client of its own service
// account (bootstrappolicy's controller names), so RBAC authorizes it with
// its system:controller:<name> binding and the audit trail names it. Each
// returns when the server's background context ends.
func controllers(cc controller.Context, clients *controllerClients, cfg Config) ([]controller.Runner, error) {
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
		account string
		new     func(controller.Context) controller.Runner
	}{
		{bootstrappolicy.LeaderElectionController, func(c controller.Context) controller.Runner { return election.New(c, election.Config{}) }},
		{bootstrappolicy.LeaseCandidateGCController, func(c controller.Context) controller.Runner {
			return leasecandidategc.New(c, leasecandidategc.Config{})
		}},
		{bootstrappolicy.GarbageCollector, func(c controller.Context) controller.Runner { return garbagecollector.New(c) }},
		{bootstrappolicy.NodeController, func(c controller.Context) controller.Runner { return nodelifecycle.New(c, cfg.NodeLifecycle) }},
		{bootstrappolicy.EventTTLController, func(c controller.Context) controller.Runner {
			return eventttl.New(c, eventttl.Config{TTL: cfg.EventTTL, Interval: cfg.EventTTLInterval})
		}},
		{bootstrappolicy.APIServerIdentityController, func(c controller.Context) controller.Runner {
			return apiserveridentity.New(c, apiserveridentity.Config{})
		}},
		{bootstrappolicy.ClusterRoleAggregationController, func(c controller.Context) controller.Runner { return clusterroleaggregation.New(c) }},
		{bootstrappolicy.NamespaceController, func(c controller.Context) controller.Runner {
			return namespaces.New(c.Client, c.Resources, c.Logger, c.Now)
		}},
	}
	runners := make([]controller.Runner, 0, len(build))
	for _, b := range build {
		c, err := as(b.account)
		if err != nil {
			return nil, err
		}
		runners = append(runners, b.new(c))
	}
	return runners, nil
}
