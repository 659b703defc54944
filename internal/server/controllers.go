package server

import (
	"github.com/leasehold/leasehold/internal/controller"
	"github.com/leasehold/leasehold/internal/controller/apiserveridentity"
	"github.com/leasehold/leasehold/internal/controller/clusterroleaggregation"
	"github.com/leasehold/leasehold/internal/controller/election"
	"github.com/leasehold/leasehold/internal/controller/eventttl"
	"github.com/leasehold/leasehold/internal/controller/garbagecollector"
	"github.com/leasehold/leasehold/internal/controller/leasecandidategc"
	"github.com/leasehold/leasehold/internal/controller/nodelifecycle"
)

// controllers lists the controllers `serve` runs, given their shared
// dependencies. Each returns when the server's background context ends.
func controllers(cc controller.Context, cfg Config) []controller.Runner {
	return []controller.Runner{
		election.New(cc, election.Config{}), leasecandidategc.New(cc, leasecandidategc.Config{}),
		garbagecollector.New(cc),
		nodelifecycle.New(cc, cfg.NodeLifecycle),
		eventttl.New(cc, eventttl.Config{TTL: cfg.EventTTL, Interval: cfg.EventTTLInterval}),
		apiserveridentity.New(cc, apiserveridentity.Config{}),
		clusterroleaggregation.New(cc),
	}
}
