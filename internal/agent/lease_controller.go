package agent

import (
	"context"
	"fmt"
	"log/slog"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/leasehold/leasehold/internal/leasecontroller"
)

// newLeaseController returns the node lease controller the kubelet runs:
// lease and holder named after the node in kube-node-lease, renewed through
// the shared lease controller algorithm, with the Node as owner.
func newLeaseController(heartbeat kubernetes.Interface, cfg Config, clk clock.Clock, log *slog.Logger) (*leasecontroller.Controller, error) {
	return leasecontroller.New(leasecontroller.Config{
		Leases:            heartbeat.CoordinationV1().Leases(corev1.NamespaceNodeLease),
		Namespace:         corev1.NamespaceNodeLease,
		Name:              cfg.NodeName,
		HolderIdentity:    cfg.NodeName,
		DurationSeconds:   cfg.LeaseDurationSeconds,
		RenewInterval:     cfg.RenewInterval(),
		Clock:             clk,
		Logger:            log,
		Description:       "node lease",
		Prepare:           setNodeOwner(heartbeat, cfg.NodeName, log),
		OnRepeatedFailure: cfg.OnRepeatedHeartbeatFailure,
		OnRenew:           cfg.OnRenew,
	})
}

// setNodeOwner is the kubelet's SetNodeOwnerFunc: a lease with no owner
// gets the Node as owner, which takes a GET. The GET fails while the Node is
// not registered yet or after it was deleted; the lease is then not written.
func setNodeOwner(client kubernetes.Interface, nodeName string, log *slog.Logger) func(context.Context, *coordinationv1.Lease) error {
	return func(ctx context.Context, lease *coordinationv1.Lease) error {
		if !needsOwnerReference(lease) {
			return nil
		}
		node, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			log.Error("Failed to get node when trying to set owner ref to the node lease", "err", err)
			return fmt.Errorf("get node %q for the lease's owner reference: %w", nodeName, err)
		}
		lease.OwnerReferences = []metav1.OwnerReference{NodeOwnerReference(node)}
		return nil
	}
}
