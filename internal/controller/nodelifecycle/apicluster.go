package nodelifecycle

import (
	"context"
	"fmt"
	"iter"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"

	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// apiCluster is the cluster as `serve` sees it: reads from the watch cache
// (no HTTP, shared objects), writes through the loopback client so they take
// the validated request path every client takes.
type apiCluster struct {
	cache    *watchcache.Cache
	client   kubernetes.Interface
	recorder record.EventRecorder
	// nodePrefix and leasePrefix are the key prefixes of nodes and of the
	// leases in kube-node-lease, built once: every pass looks up a lease
	// per node.
	nodePrefix, leasePrefix string
	// listed is how many nodes the last nodeRevisions call listed.
	listed int
}

func newAPICluster(cache *watchcache.Cache, client kubernetes.Interface, nodes, leases *registry.Resource) *apiCluster {
	return &apiCluster{
		cache: cache, client: client,
		nodePrefix:  nodes.KeyPrefix(""),
		leasePrefix: leases.KeyPrefix(corev1.NamespaceNodeLease),
	}
}

// nodeRevisions lists the node keys' revisions into a buffer made for the
// call, sized by the last: one kept from pass to pass held 24 bytes per node
// (26 to 32 with its slack, in two heap-per-node.sh profiles at 20,000
// nodes) for the seconds between passes, to save a single allocation per
// pass. The names are the watch cache's keys past the prefix, the strings
// it holds for as long as the node exists.
func (a *apiCluster) nodeRevisions() (iter.Seq2[string, int64], int) {
	revs, _ := a.cache.ListRevisions(a.nodePrefix, make([]watchcache.KeyRevision, 0, a.listed+a.listed/16))
	a.listed = len(revs)
	return func(yield func(string, int64) bool) {
		for _, kr := range revs {
			if !yield(kr.Key[len(a.nodePrefix):], kr.ModRevision) {
				return
			}
		}
	}, len(revs)
}

func (a *apiCluster) node(name string) (*corev1.Node, bool) {
	o, ok := a.cache.GetUnder(a.nodePrefix, name)
	if !ok {
		return nil, false
	}
	n, ok := o.(*corev1.Node)
	return n, ok
}

func (a *apiCluster) nodeLease(name string, seen int64) (*coordinationv1.Lease, int64) {
	o, rev, ok := a.cache.GetUnderIfChanged(a.leasePrefix, name, seen)
	if !ok || o == nil {
		return nil, rev
	}
	l, _ := o.(*coordinationv1.Lease)
	return l, rev
}

func (a *apiCluster) freshNode(ctx context.Context, name string) (*corev1.Node, error) {
	n, err := a.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("getting node %s: %w", name, err)
	}
	return n, nil
}

func (a *apiCluster) updateStatus(ctx context.Context, n *corev1.Node) error {
	if _, err := a.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating status of node %s: %w", n.Name, err)
	}
	return nil
}

func (a *apiCluster) swapTaints(ctx context.Context, name string, add, remove []corev1.Taint) error {
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		n, err := a.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		taints, changed := swappedTaints(n.Spec.Taints, add, remove)
		if !changed {
			return nil
		}
		n.Spec.Taints = taints
		_, err = a.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("changing taints of node %s: %w", name, err)
	}
	return nil
}

func (a *apiCluster) event(n *corev1.Node, reason, messageFmt string, args ...any) {
	// Cluster-scoped objects' events go to the default namespace, as the
	// recorder does for an empty namespace.
	ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}
	a.recorder.Eventf(ref, corev1.EventTypeNormal, reason, messageFmt, args...)
}
