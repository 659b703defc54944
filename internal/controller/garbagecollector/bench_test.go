package garbagecollector_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/server/servertest"
)

// BenchmarkCollectNodeLeases measures how long the collector takes, per
// lease, to delete the node leases of a fleet whose Nodes were deleted at
// once (one op = one lease collected). Creating the fleet is not timed.
func BenchmarkCollectNodeLeases(b *testing.B) {
	const fleet = 200
	srv := servertest.Start(b)
	c := srv.Client
	ctx := context.Background()
	leases := c.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	b.ResetTimer()
	b.StopTimer()
	for round := 0; round*fleet < b.N; round++ {
		for i := range fleet {
			name := fmt.Sprintf("bench-%d-%d", round, i)
			n, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			if err != nil {
				b.Fatal(err)
			}
			_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: n.UID}}}}, metav1.CreateOptions{})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		if err := c.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			b.Fatal(err)
		}
		for {
			list, err := leases.List(ctx, metav1.ListOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if len(list.Items) == 0 {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		b.StopTimer()
	}
	b.ReportMetric(float64(fleet), "leases/round")
}
