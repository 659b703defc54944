package server

import (
	"fmt"
	"log/slog"

	"github.com/leasehold/leasehold/internal/cluster"
)

// Behind a cluster (--authentication-kubeconfig), serve is the aggregated
// API server of coordination.k8s.io and nothing else: the cluster keeps
// Nodes, namespaces, events and RBAC, decides who callers are and what they
// may do, and runs the controllers (node lifecycle, garbage collector,
// namespaces) through its API, as it would with leases in etcd. So in this
// mode serve stores only what the APIServices route to it, runs none of its
// own controllers, and creates no system namespaces or bootstrap policy:
// its resources are served.Cluster (objects.go), its access control
// newClusterAuthorization and the cluster's authenticator (access.go), and
// Run starts no controllers (controllers.go).

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
