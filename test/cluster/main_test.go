// Package cluster runs Leasehold as the aggregated API server of
// coordination.k8s.io behind a real Kubernetes control plane: Debian's etcd,
// kube-apiserver and kube-controller-manager 1.33 (built from the Go module
// proxy by internal/testdeps/kubetools), `leasehold serve` in cluster mode
// behind APIService v1.coordination.k8s.io, and `leasehold agent`s as nodes
// holding credentials the cluster issued. Everything talks through
// kube-apiserver, as in a real cluster: kubectl of every version on the
// machine, the agents, and kube-controller-manager's node lifecycle
// controller, garbage collector and leader election.
//
// Invariants: every process listens on 127.0.0.1 on a free port and is
// stopped by its PID when its test ends; every wait is bounded; when the
// Kubernetes binaries cannot be built the tests say NOT TESTED and skip.
package cluster

import (
	"testing"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// leaseholdBinary is the binary TestMain builds from this source tree.
var leaseholdBinary string

func TestMain(m *testing.M) { testdeps.MainWithBinary(m, "cluster", &leaseholdBinary) }
