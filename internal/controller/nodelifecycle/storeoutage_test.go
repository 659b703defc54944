package nodelifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// An outage of the control plane's own store silences every node at once
// (none can renew), so it must mark none Unknown: not while it lasts, and
// not when it ends, before the nodes had a grace period to renew through
// the recovered store. A node that stays silent after that is judged as
// always.
func TestStoreOutageMarksNoNodeUnknown(t *testing.T) {
	for _, tc := range []struct {
		name string
		// seenDown: a monitor pass runs while the store is down (else the
		// whole outage falls between two passes).
		seenDown bool
	}{{"seen", true}, {"between passes", false}} {
		t.Run(tc.name, func(t *testing.T) {
			names := make([]string, 20)
			for i := range names {
				names[i] = fmt.Sprintf("n%02d", i)
			}
			m := newMemCluster(t, t0)
			for _, n := range names {
				m.addNode(n, "", corev1.ConditionTrue)
				m.renew(n, t0)
			}
			var status StoreStatus
			c, err := newController(Config{
				Monotonic:   func() time.Duration { return m.clock.Since(t0) },
				Clock:       m.clock,
				Logger:      slog.New(slog.DiscardHandler),
				StoreStatus: func() StoreStatus { return status },
			}, m)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			c.monitor(ctx)
			// 40 s into the nodes' 50 s grace the store goes away for two minutes.
			m.clock.Step(40 * time.Second)
			status = StoreStatus{Down: true, Outages: 1}
			if tc.seenDown {
				for range 24 {
					m.clock.Step(5 * time.Second)
					c.monitor(ctx)
				}
			} else {
				m.clock.Step(2 * time.Minute)
			}
			status.Down = false
			// Back: the agents renew within 30 s, all but the last node.
			for elapsed := time.Duration(0); elapsed < 45*time.Second; elapsed += 5 * time.Second {
				c.monitor(ctx)
				m.clock.Step(5 * time.Second)
				if elapsed == 25*time.Second {
					for _, n := range names[:len(names)-1] {
						m.renew(n, m.clock.Now())
					}
				}
			}
			c.monitor(ctx)
			if m.writes != 0 {
				t.Fatalf("%d status writes during and after a store outage; want none", m.writes)
			}
			for _, n := range names {
				wantCondition(t, m.get(n), corev1.NodeReady, corev1.ConditionTrue, "Agent", "posted")
			}
			// The silent node's grace, counted from the store's return, ends.
			m.clock.Step(10 * time.Second)
			c.monitor(ctx)
			wantCondition(t, m.get(names[len(names)-1]), corev1.NodeReady, corev1.ConditionUnknown, reasonUnknown, messageUnknown)
			for _, n := range names[:len(names)-1] {
				wantCondition(t, m.get(n), corev1.NodeReady, corev1.ConditionTrue, "Agent", "posted")
			}
		})
	}
}
