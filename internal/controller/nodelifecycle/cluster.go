package nodelifecycle

import (
	"context"
	"iter"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
)

// cluster is everything the controller reads and writes. The server's
// implementation (apiCluster) reads the watch cache and writes through the
// loopback client; keeping it behind this seam lets the decision logic be
// driven on a fake clock.
type cluster interface {
	// nodeRevisions lists the names of the current nodes with their store
	// revisions, and says how many there are. It reads no node: a pass
	// reads (node) only the nodes whose revision is not the one it judged
	// last, since the store may keep unchanged nodes compactly and decoding
	// every node on every pass is what the controller's views exist to
	// avoid. The controller keeps the names it is given: they should be
	// strings the store keeps anyway, not copies.
	nodeRevisions() (names iter.Seq2[string, int64], count int)
	// node returns one current node, shared, or false if there is none.
	node(name string) (*corev1.Node, bool)
	// nodeLease returns the Lease kube-node-lease/name, shared, and its
	// store revision, unless that revision is seen: l is nil when there is
	// no lease or when it is unchanged since the caller read it at seen (0:
	// never read). A pass looks at every node's lease, and an unchanged one
	// need not be read (nor, kept compactly, decoded) again.
	nodeLease(name string, seen int64) (l *coordinationv1.Lease, rev int64)
	// freshNode reads a node from the server itself (after a conflict the
	// cache may lag). The result is the caller's to change.
	freshNode(ctx context.Context, name string) (*corev1.Node, error)
	// updateStatus writes n's status (PUT nodes/NAME/status); n carries the
	// resourceVersion it was read at, so a concurrent write is a conflict.
	updateStatus(ctx context.Context, n *corev1.Node) error
	// swapTaints adds the taints in add (replacing any with the same key and
	// effect) and removes those matching remove by key and effect, retrying
	// on conflicts; nothing is written if nothing changes.
	swapTaints(ctx context.Context, name string, add, remove []corev1.Taint) error
	// event records a Normal event about node n.
	event(n *corev1.Node, reason, messageFmt string, args ...any)
}
