package dashboard

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// BenchmarkTick100k is one tick of a 100,000-node fleet renewing every
// 10 s with a 500 ms tick: 5,000 renewals, then the snapshot and the heat
// map's delta against the previous tick. It reports the bytes a page
// receives for the heat map per tick (delta, base64) against the keyframe.
//
//	go test ./internal/dashboard -run '^$' -bench Tick100k -benchtime 50x
func BenchmarkTick100k(b *testing.B) {
	const nodes, perTick = 100000, 5000
	clk := clocktesting.NewFakeClock(t0)
	f := NewFleet(clk)
	leases := make([]string, nodes)
	for i := range nodes {
		leases[i] = fmt.Sprintf("node-%06d", i)
		// Renewals spread over the 10 s interval, as bench rate does.
		f.SetLease(lease(NodeLeaseNamespace, leases[i], leases[i], t0.Add(-time.Duration(i%20)*500*time.Millisecond), 40, 0))
	}
	_, prev := f.Snapshot(clk.Now())
	var deltaBytes, keyBytes int
	b.ResetTimer()
	for n := range b.N {
		clk.Step(500 * time.Millisecond)
		now := clk.Now()
		for i := range perTick {
			name := leases[(n*perTick+i)%nodes]
			f.SetLease(lease(NodeLeaseNamespace, name, name, now, 40, 0))
		}
		_, heat := f.Snapshot(now)
		d, ok := heat.delta(prev)
		if !ok {
			b.Fatal("no delta between two ticks of one layout")
		}
		deltaBytes += len(base64Bytes(d))
		prev = heat
	}
	b.StopTimer()
	keyBytes = len(base64Bytes(prev.keyframe()))
	b.ReportMetric(float64(deltaBytes)/float64(b.N), "delta-B/tick")
	b.ReportMetric(float64(keyBytes), "keyframe-B")
}

// BenchmarkSnapshot100k is a tick's summary and heat map alone, over
// 100,000 node leases and Nodes, with one page's default view.
//
//	go test ./internal/dashboard -run '^$' -bench Snapshot100k
func BenchmarkSnapshot100k(b *testing.B) {
	const nodes = 100000
	clk := clocktesting.NewFakeClock(t0)
	f := NewFleet(clk)
	for i := range nodes {
		name := fmt.Sprintf("node-%06d", i)
		f.SetLease(lease(NodeLeaseNamespace, name, name, t0.Add(-time.Duration(i%20)*500*time.Millisecond), 40, 0))
		f.SetNode(node(name, corev1.ConditionTrue))
	}
	f.NodesKnown(true)
	f.Snapshot(clk.Now())
	for b.Loop() {
		clk.Step(500 * time.Millisecond)
		f.Snapshot(clk.Now())
		f.Rows(View{Limit: 50}, clk.Now())
	}
}
