package node_test

import (
	"context"
	"testing"

	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/authz/node"
)

// BenchmarkLeaseUpdate is the Node authorizer's share of a node lease
// renewal, the hot path: it must stay in the tens of nanoseconds, without
// allocating.
func BenchmarkLeaseUpdate(b *testing.B) {
	var a authz.Authorizer = node.Authorizer{}
	attrs := leaseReq(nodeUser("node-000123"), "update", "kube-node-lease", "node-000123")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if d, _, _ := a.Authorize(ctx, attrs); d != authz.DecisionAllow {
			b.Fatal("renewal not allowed")
		}
	}
}

// BenchmarkListOwnNodeBySelector is a node's watch of its own Node, the
// only path that parses a field selector.
func BenchmarkListOwnNodeBySelector(b *testing.B) {
	var a authz.Authorizer = node.Authorizer{}
	attrs := nodeReq(nodeUser("node-000123"), "watch", "", "", "metadata.name=node-000123")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if d, _, _ := a.Authorize(ctx, attrs); d != authz.DecisionAllow {
			b.Fatal("watch not allowed")
		}
	}
}
