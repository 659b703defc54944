package nodelifecycle

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkMonitorPass is one node-monitor pass over 10,000 healthy nodes
// whose leases were renewed since the last pass: the steady-state cost a
// fleet puts on the controller every --node-monitor-period, without writes.
func BenchmarkMonitorPass(b *testing.B) {
	const nodes = 10_000
	m := newMemCluster(b, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	names := make([]string, nodes)
	for i := range names {
		names[i] = fmt.Sprintf("node-%05d", i)
		m.addNode(names[i], "", corev1.ConditionTrue)
		m.renew(names[i], m.clock.Now())
	}
	c := m.controller(Config{})
	ctx := context.Background()
	c.monitor(ctx)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		m.clock.Step(5 * time.Second)
		for _, name := range names {
			m.renew(name, m.clock.Now())
		}
		b.StartTimer()
		c.monitor(ctx)
	}
	b.StopTimer()
	if m.writes != 0 {
		b.Fatalf("%d writes during passes over healthy nodes", m.writes)
	}
}
