package nodelifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// steppedClock is a wall clock that can be stepped (as NTP or an operator
// steps a host's clock) over a fake clock that stands for the passing of
// real time; the controller's monotonic clock follows the latter only.
type steppedClock struct {
	*clocktesting.FakeClock
	offset time.Duration
}

func (c *steppedClock) Now() time.Time                  { return c.FakeClock.Now().Add(c.offset) }
func (c *steppedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// clockStepCluster is a cluster of nodes renewed at t0 and a controller
// that reads the stepped wall clock and the unstepped monotonic one.
func clockStepCluster(t *testing.T, names []string) (*memCluster, *steppedClock, *Controller) {
	t.Helper()
	m := newMemCluster(t, t0)
	for _, n := range names {
		m.addNode(n, "", corev1.ConditionTrue)
		m.renew(n, t0)
	}
	wall := &steppedClock{FakeClock: m.clock}
	c, err := newController(Config{
		Clock:     wall,
		Monotonic: func() time.Duration { return m.clock.Since(t0) },
		Logger:    slog.New(slog.DiscardHandler),
	}, m)
	if err != nil {
		t.Fatal(err)
	}
	c.monitor(context.Background())
	return m, wall, c
}

// run advances real time by d in 5 s monitor periods; every node in
// renewing renews its lease every 10 s with the wall clock's time, as a
// node agent on a host whose clock was stepped too.
func run(m *memCluster, wall *steppedClock, c *Controller, d time.Duration, renewing []string) {
	for elapsed := time.Duration(0); elapsed < d; elapsed += 5 * time.Second {
		m.clock.Step(5 * time.Second)
		if (elapsed/(5*time.Second))%2 == 1 {
			for _, n := range renewing {
				m.renew(n, wall.Now())
			}
		}
		c.monitor(context.Background())
	}
}

func TestWallClockStepsMarkNoRenewingNodeUnknown(t *testing.T) {
	for _, step := range []time.Duration{50 * time.Second, 10 * time.Minute, -50 * time.Second, -10 * time.Minute} {
		t.Run(fmt.Sprint(step), func(t *testing.T) {
			names := make([]string, 50)
			for i := range names {
				names[i] = fmt.Sprintf("n%02d", i)
			}
			m, wall, c := clockStepCluster(t, names)
			run(m, wall, c, 20*time.Second, names)
			wall.offset += step
			run(m, wall, c, 2*time.Minute, names)
			if m.writes != 0 {
				t.Fatalf("%d status writes after a wall-clock step of %v; want none", m.writes, step)
			}
			for _, n := range names {
				wantCondition(t, m.get(n), corev1.NodeReady, corev1.ConditionTrue, "Agent", "posted")
			}
		})
	}
}

// A step neither ages nor rejuvenates a silent node: it goes Unknown one
// grace period after its last renewal as measured on the monotonic clock.
func TestWallClockStepsKeepASilentNodesAge(t *testing.T) {
	for _, step := range []time.Duration{-10 * time.Minute, 10 * time.Minute} {
		t.Run(fmt.Sprint(step), func(t *testing.T) {
			m, wall, c := clockStepCluster(t, []string{"silent", "live"})
			// silent renews for the last time at 10 s, then the clock steps.
			run(m, wall, c, 10*time.Second, []string{"silent", "live"})
			wall.offset += step
			run(m, wall, c, 50*time.Second, []string{"live"})
			wantCondition(t, m.get("silent"), corev1.NodeReady, corev1.ConditionTrue, "Agent", "posted")
			run(m, wall, c, 5*time.Second, []string{"live"})
			wantCondition(t, m.get("silent"), corev1.NodeReady, corev1.ConditionUnknown, reasonUnknown, messageUnknown)
			wantCondition(t, m.get("live"), corev1.NodeReady, corev1.ConditionTrue, "Agent", "posted")
		})
	}
}
