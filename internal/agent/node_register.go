package agent

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/leasehold/leasehold/internal/leasecontroller"
)

// register creates the Node, retrying with backoff (200ms doubling to 7s)
// until it succeeds or ctx ends; it reports whether the node is registered.
// Like the kubelet, it blocks the status loop but not the lease loop: the
// lease controller simply waits for the Node to exist to own its lease.
func (s *statusController) register(ctx context.Context) bool {
	wait := leasecontroller.BackoffStart
	for {
		s.log.Info("Attempting to register node")
		if s.tryRegister(ctx) {
			s.log.Info("Successfully registered node")
			return true
		}
		wait = leasecontroller.NextBackoff(wait)
		if !leasecontroller.Sleep(ctx, s.clock, wait) {
			return false
		}
	}
}

// tryRegister creates the Node; if it already exists (an agent restart, or
// a Node registered by hand) it is reused, with the well-known labels forced
// back to the agent's values.
func (s *statusController) tryRegister(ctx context.Context) bool {
	nodes := s.client.CoreV1().Nodes()
	_, err := nodes.Create(ctx, InitialNode(s.cfg, s.clock.Now()), metav1.CreateOptions{})
	if err == nil {
		return true
	}
	if !apierrors.IsAlreadyExists(err) {
		if ctx.Err() == nil {
			s.log.Error("Unable to register node with API server", "err", err)
		}
		return false
	}
	existing, err := nodes.Get(ctx, s.cfg.NodeName, metav1.GetOptions{ResourceVersion: "0"})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("Unable to register node with API server, error getting existing node", "err", err)
		}
		return false
	}
	s.log.Info("Node was previously registered", "uid", existing.UID)
	wanted := existing.DeepCopy()
	if !reconcileDefaultLabels(wanted, s.cfg.NodeName) {
		return true
	}
	// Labels go to the Node itself rather than nodes/status: not every
	// server lets the status subresource change metadata.
	if _, err := patchNode(ctx, nodes, existing, wanted); err != nil {
		if ctx.Err() == nil {
			s.log.Error("Unable to reconcile node with API server, error updating node", "err", err)
		}
		return false
	}
	return true
}

// patchNode sends the strategic merge patch from old to new to the Node or
// to the subresource named.
func patchNode(ctx context.Context, nodes corev1client.NodeInterface, old, new *corev1.Node, subresources ...string) (*corev1.Node, error) {
	patch, err := nodeStatusPatch(old, new)
	if err != nil {
		return nil, err
	}
	patched, err := nodes.Patch(ctx, old.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, subresources...)
	if err != nil {
		return nil, fmt.Errorf("patch node %q: %w", old.Name, err)
	}
	return patched, nil
}
